import type { OperationDefinition } from '@medplum/fhirtypes';
import type { KeptAnswers, OperationValues } from '../../core/operation.js';
import type { FhirRequest } from '../../core/fhir-request.js';
import { heard } from '../../storage/change-feed.js';
import { terminologyCache } from '../providers/fhir/index-cache.js';
import { PreparedAnswer } from '../../core/reusable-answer.js';
import { Generations } from './generations.js';
import { formatOutput } from '../../operations/format-output.js';
import type { CodeSystemInfo, TermContext, TerminologyEnv } from '../types.js';

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
 * {@link ASKED_LIMIT} to twice as many questions: a stream of ever new questions (random
 * concepts of a large release) pays one key per request, nothing more. The answers are held in
 * two generations (generations.ts) of at most {@link ANSWER_LIMIT} answers and
 * {@link ANSWER_BYTES} of text each: no per-request bookkeeping of their age, and a set of
 * questions asked in turn that is larger than one generation is still answered from memory.
 */
export const ANSWER_LIMIT = 4096;
export const ANSWER_BYTES = 8_000_000;
export const ASKED_LIMIT = 4096;

type Kept = { owner: CodeSystemInfo | number; answer: PreparedAnswer };
const keptBytes = (kept: { answer: PreparedAnswer }) => kept.answer.json.length;
/** Kept answers, each with what it belongs to: a code system object, or a terminology stamp (`stampedAnswer`). */
const answers = new Generations<Kept>(ANSWER_LIMIT, ANSWER_BYTES, keptBytes);
/** Questions asked recently whose answers are not kept (yet), with what they were about. */
const asked = new Generations<CodeSystemInfo | number>(ASKED_LIMIT);
let hits = 0;

/**
 * The answer to `question` about `cs`: a kept one, else `compute()`'s output — kept, formatted
 * by `definition` and serialised, when the question was asked before.
 */
export function cachedAnswer(
  tc: TermContext,
  cs: CodeSystemInfo,
  definition: OperationDefinition,
  question: string,
  compute: () => Promise<OperationValues | PreparedAnswer>,
): Promise<OperationValues | PreparedAnswer> {
  return keptAnswer(tc, cs.key, cs, definition, question, compute);
}

/**
 * The answer to a value-set question (`ValueSet/$validate-code`): it depends on every value set
 * and code system the value set reaches, so it is kept with the terminology cache's stamp taken
 * before it is computed — any terminology change heard on any node moves the stamp, and the kept
 * answer is then computed anew — not with one code system object. Nothing is kept while changes
 * are not heard (no stamp).
 */
export function stampedAnswer(
  env: TerminologyEnv,
  tc: TermContext,
  definition: OperationDefinition,
  question: string,
  compute: () => Promise<OperationValues>,
): Promise<OperationValues | PreparedAnswer> {
  const stamp = terminologyCache(env.db).stamp();
  return stamp === undefined ? compute() : keptAnswer(tc, 'value-set', stamp, definition, question, compute);
}

async function keptAnswer(
  tc: TermContext,
  /** The code system's key, or `value-set`. */
  about: number | string,
  owner: CodeSystemInfo | number,
  definition: OperationDefinition,
  question: string,
  compute: () => Promise<OperationValues | PreparedAnswer>,
): Promise<OperationValues | PreparedAnswer> {
  if (tc.supplements.length > 0 || tc.inlineCodeSystems.length > 0 || tc.inlineValueSets.length > 0) return compute();
  const auth = tc.repo.auth;
  const key = `${about}\u0000${auth.projectId ?? ''}\u0000${auth.superAdmin ? 1 : 0}\u0000${question}`;
  const kept = answers.get(key);
  if (kept?.owner === owner) {
    hits++;
    return kept.answer;
  }
  if (asked.get(key) !== owner) {
    // First time (for this code system object or stamp): remember the question only.
    asked.set(key, owner);
    return compute();
  }
  asked.delete(key);
  const output = await compute();
  let answer: PreparedAnswer;
  try {
    // An answer already written as text (a `$lookup`, lookup-answer.ts) is kept as it is.
    answer = output instanceof PreparedAnswer ? new PreparedAnswer(output.json) : new PreparedAnswer(JSON.stringify(formatOutput(definition, output)));
  } catch {
    return output; // output that breaks the definition: the operation framework reports it
  }
  answers.set(key, { owner, answer });
  return answer;
}

/**
 * The same answers by request line (`Operation.keptAnswers`): a GET asked again word for word —
 * the operation, its target, its query, the request's `Accept-Language`, the caller's project and
 * super-admin rights — or a POST with the same (small) JSON body as well, is answered before its
 * input is read, its code system resolved or a context built. An answer is kept here only when the operation gave a kept answer
 * (`cachedAnswer` above) to that request line, with the terminology cache's stamp taken before
 * the request was answered; it is given again only while that stamp is current (no terminology
 * change heard since, on any node — the same changes that replace the code system objects the
 * answers above belong to) and once every change committed before the request has been heard.
 */
export function keptAnswers(env: TerminologyEnv, code: string): KeptAnswers {
  return {
    async find(req, target) {
      const stamp = await heardStamp(env, req.ctx.since);
      if (stamp === undefined) return undefined;
      const { auth, acceptLanguage } = req.ctx;
      const body = bodyText(req);
      if (body === undefined) return undefined;
      const key = `${code}\u0000${target.resourceType ?? ''}\u0000${target.id ?? ''}\u0000${auth.projectId ?? ''}\u0000${auth.superAdmin ? 1 : 0}\u0000${acceptLanguage ?? ''}\u0000${queryText(req.query)}\u0000${body}`;
      const kept = byRequest.get(key);
      if (kept?.stamp === stamp) {
        hits++;
        return { answer: kept.answer };
      }
      return {
        keep(answer) {
          byRequest.set(key, { stamp, answer });
        },
      };
    },
  };
}

/**
 * The terminology cache's stamp once every change committed before `since` has been heard (the
 * caller's barrier), or undefined while changes are not heard: nothing kept may be used then.
 * What was kept under the stamp it answers is current.
 */
export async function heardStamp(env: TerminologyEnv, since: number | undefined): Promise<number | undefined> {
  const cache = terminologyCache(env.db);
  if (cache.stamp() === undefined) return undefined;
  if (!(await heard(env.db.caughtUp(since)))) return undefined; // not listening
  return cache.stamp();
}

const byRequest = new Generations<{ stamp: number; answer: PreparedAnswer }>(ANSWER_LIMIT, ANSWER_BYTES, keptBytes);

/** A POST's body larger than this (bytes, as sent) is not part of a key: its answer is not kept by request. */
export const POSTED_KEY_LIMIT = 4096;

/**
 * The body as it stands in the key above: none for a GET; for a POST its parsed JSON written
 * again (the operation reads only that, so the same JSON is the same question), or undefined —
 * not kept — when it is larger than POSTED_KEY_LIMIT (a `tx-resource` code system, whose answer
 * is not kept anyway).
 */
function bodyText(req: FhirRequest): string | undefined {
  if (req.method !== 'POST') return '';
  const length = Number(req.headers['content-length'] ?? Infinity);
  if (!(length <= POSTED_KEY_LIMIT) || req.body === undefined) return undefined;
  return JSON.stringify(req.body);
}

/**
 * A query's pairs as they stand in the key above. A GET asked again arrives with the same frozen
 * pairs (src/http/request-info.ts keeps the reading of a recent request line): those are named
 * by a number given to them once (`#<n>`, which no JSON text starts with), so the key stays short
 * and no text is written per request. Other pairs are named by their JSON text.
 */
function queryText(query: FhirRequest['query']): string {
  if (!Object.isFrozen(query)) return JSON.stringify(query);
  let text = queryNames.get(query);
  if (text === undefined) queryNames.set(query, (text = `#${++queriesNamed}`));
  return text;
}
const queryNames = new WeakMap<FhirRequest['query'], string>();
let queriesNamed = 0;

/** Answers given from the cache since the start (tests pin that an answer was or was not reused). */
export function answerCacheHits(): number {
  return hits;
}
