import type { OperationDefinition } from '@medplum/fhirtypes';
import type { OperationValues } from '../../core/operation.js';
import { PreparedAnswer } from '../../core/reusable-answer.js';
import { formatOutput } from '../../operations/format-output.js';
import type { CodeSystemInfo, TermContext } from '../types.js';

/**
 * Recent answers of the point operations on one code system (`$lookup`, `$subsumes`,
 * `$validate-code` of a code system; docs/terminology.md#answer-cache), given again to the same
 * question as the JSON text they were written as (src/core/reusable-answer.ts): no handler,
 * no formatting, no serialising.
 *
 * An answer belongs to the code system object it was computed from: every terminology change
 * on any node drops the resolution cache (providers/fhir/index-cache.ts), so the next request
 * resolves a new object and never meets an answer of the old one. The key holds everything
 * else the answer depends on: the operation and its inputs, and the caller's project and
 * super-admin rights (which other versions a message may name). Requests that bring their own
 * resources (`tx-resource`) or supplements are not cached.
 *
 * An answer is kept only when its question was asked before, among the last
 * {@link ASKED_LIMIT} questions: a stream of ever new questions (random concepts of a large
 * release) pays one key per request, nothing more. At most {@link ANSWER_LIMIT} answers are
 * kept; when full, all are dropped (no per-request bookkeeping of their age).
 */
export const ANSWER_LIMIT = 1024;
export const ASKED_LIMIT = 4096;

const answers = new Map<string, { cs: CodeSystemInfo; answer: PreparedAnswer }>();
/** Questions asked recently whose answers are not kept (yet), with the code system asked about. */
const asked = new Map<string, CodeSystemInfo>();
let hits = 0;

/**
 * The answer to `question` about `cs`: a kept one, else `compute()`'s output — kept, formatted
 * by `definition` and serialised, when the question was asked before.
 */
export async function cachedAnswer(
  tc: TermContext,
  cs: CodeSystemInfo,
  definition: OperationDefinition,
  question: string,
  compute: () => Promise<OperationValues>,
): Promise<OperationValues | PreparedAnswer> {
  if (tc.supplements.length > 0 || tc.inlineCodeSystems.length > 0 || tc.inlineValueSets.length > 0) return compute();
  const auth = tc.repo.auth;
  const key = `${cs.key}\u0000${auth.projectId ?? ''}\u0000${auth.superAdmin ? 1 : 0}\u0000${question}`;
  const kept = answers.get(key);
  if (kept?.cs === cs) {
    hits++;
    return kept.answer;
  }
  if (asked.get(key) !== cs) {
    // First time (for this code system object): remember the question only.
    if (asked.size >= ASKED_LIMIT) asked.clear();
    asked.set(key, cs);
    return compute();
  }
  asked.delete(key);
  const output = await compute();
  let answer: PreparedAnswer;
  try {
    answer = new PreparedAnswer(JSON.stringify(formatOutput(definition, output)));
  } catch {
    return output; // output that breaks the definition: the operation framework reports it
  }
  if (!kept && answers.size >= ANSWER_LIMIT) answers.clear();
  answers.set(key, { cs, answer });
  return answer;
}

/** Answers given from the cache since the start (tests pin that an answer was or was not reused). */
export function answerCacheHits(): number {
  return hits;
}
