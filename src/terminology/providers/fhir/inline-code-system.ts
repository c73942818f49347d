import { createHash } from 'node:crypto';
import type { CodeSystem } from '@medplum/fhirtypes';
import { badRequest } from '../../../fhir/outcome.js';
import { stableStringify } from '../../../storage/stable-stringify.js';
import { checkInlineConcepts, terminologyLimits } from '../../limits.js';
import type { CodeSystemInfo, TermContext } from '../../types.js';
import { ClosureTooLarge } from './closure.js';
import { indexFromRows, setRequestIndex } from './code-system-index.js';
import { codeSystemRows } from './code-system-rows.js';
import { publicationOf } from '../publication.js';
import { terminologyCache } from './index-cache.js';

/** Lets other requests run between the phases of building an inline index. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The in-memory index of a request-supplied CodeSystem (never written to the database): built
 * from the same rows a stored one is indexed with, and kept in the index cache under its content
 * hash, so a client that sends the same resource with every request pays for building it once.
 * Its size is bounded (limits.ts#checkInlineConcepts) and the event loop is given back between
 * hashing, making rows and building the index, so one such request holds the others up for a
 * bounded slice at a time (docs/terminology.md#limits).
 */
export async function inlineCodeSystem(tc: TermContext, cs: CodeSystem): Promise<CodeSystemInfo> {
  checkInlineConcepts(cs, terminologyLimits(tc.env));
  const hash = createHash('sha256').update(stableStringify(cs)).digest('hex').slice(0, 40);
  const cache = terminologyCache(tc.db);
  const key = cache.inlineKey(hash);
  let index = cache.peek(key);
  if (!index) {
    try {
      await yieldToLoop();
      const rows = codeSystemRows(cs);
      await yieldToLoop();
      index = indexFromRows(rows);
    } catch (err) {
      if (err instanceof ClosureTooLarge) throw badRequest('CodeSystem hierarchy is too large to index', 'CodeSystem.concept');
      throw err;
    }
    cache.keep(key, `tx:${hash}`, index);
  }
  const publication = publicationOf(cs);
  const info: CodeSystemInfo & { inline: true } = {
    key,
    resourceId: `tx:${hash}`,
    projectId: undefined,
    url: cs.url as string,
    version: cs.version,
    lastUpdated: new Date().toISOString(),
    content: cs.content ?? 'complete',
    caseSensitive: cs.caseSensitive !== false,
    hierarchyMeaning: cs.hierarchyMeaning,
    supplements: cs.supplements,
    language: cs.language,
    name: cs.name,
    title: cs.title,
    propertyDefs: cs.property ?? [],
    conceptCount: index.maxId,
    ...(publication ? { publication } : {}),
    inline: true,
  };
  setRequestIndex(tc, key, index);
  return info;
}
