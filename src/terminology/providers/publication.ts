import type { Publication } from '../types.js';
import { STANDARDS_STATUS } from './concept-extensions.js';

/**
 * The publication status a CodeSystem or ValueSet states (docs/terminology.md#status-of-the-resources-used):
 * its `status`, `experimental` and `structuredefinition-standards-status` extension; undefined
 * when it states none. Shared by the stores that keep it and the rules that report it.
 */
export function publicationOf(r: { status?: string; experimental?: boolean; extension?: Array<{ url?: string; valueCode?: string }> }): Publication | undefined {
  const standardsStatus = (r.extension ?? []).find((e) => e.url === STANDARDS_STATUS)?.valueCode;
  if (r.status === undefined && r.experimental === undefined && standardsStatus === undefined) return undefined;
  return {
    ...(r.status !== undefined ? { status: r.status } : {}),
    ...(r.experimental !== undefined ? { experimental: r.experimental } : {}),
    ...(standardsStatus !== undefined ? { standardsStatus } : {}),
  };
}
