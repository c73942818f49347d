import type { ValueSet, ValueSetExpansionParameter } from '@medplum/fhirtypes';
import { publicationOf } from '../providers/publication.js';
import { msg } from '../messages.js';
import type { CodeSystemInfo, Publication, TxIssue } from '../types.js';

/**
 * The status of the resources a request uses (docs/terminology.md#status-of-the-resources-used):
 * a deprecated, withdrawn or retired CodeSystem or ValueSet, and an experimental or draft one
 * used by a value set that is not itself experimental or draft. `$validate-code` reports each
 * as an informational issue, `$expand` as a `warning-<status>` expansion parameter. Written
 * once against the publication status every provider's code system states (CodeSystemInfo).
 */

export type StatusFinding = 'deprecated' | 'withdrawn' | 'retired' | 'experimental' | 'draft';

/** Who uses the resource: another resource (its publication status), or nobody (the value set asked about). */
export type StatusSource = Publication | 'self';

const MESSAGE_IDS: Record<StatusFinding, string> = {
  deprecated: 'MSG_DEPRECATED',
  withdrawn: 'MSG_WITHDRAWN',
  retired: 'MSG_RETIRED',
  experimental: 'MSG_EXPERIMENTAL',
  draft: 'MSG_DRAFT',
};

/**
 * What is worth reporting about a resource of publication status `used`, in this order: its
 * standards status deprecated or withdrawn, its status retired; and, when another resource uses
 * it, experimental where the user is not, draft (status or standards status) where the user is not.
 */
export function statusFinding(used: Publication | undefined, source: StatusSource): StatusFinding | undefined {
  if (!used) return undefined;
  if (used.standardsStatus === 'deprecated') return 'deprecated';
  if (used.standardsStatus === 'withdrawn') return 'withdrawn';
  if (used.status === 'retired') return 'retired';
  if (source === 'self') return undefined;
  if (used.experimental === true && source.experimental !== true) return 'experimental';
  const draft = (p: Publication) => p.status === 'draft' || p.standardsStatus === 'draft';
  if (draft(used) && !draft(source)) return 'draft';
  return undefined;
}

/** The publication status of a value set (undefined fields when it states none). */
export function valueSetPublication(vs: ValueSet): Publication {
  return publicationOf(vs) ?? {};
}

/** Collects the findings of one request, each resource once. */
export class StatusReport {
  private readonly found = new Map<string, { finding: StatusFinding; type: 'CodeSystem' | 'ValueSet'; canonical: string }>();

  codeSystem(cs: CodeSystemInfo, source: StatusSource): void {
    this.add('CodeSystem', cs.version ? `${cs.url}|${cs.version}` : cs.url, statusFinding(cs.publication, source));
  }

  valueSet(vs: ValueSet, source: StatusSource): void {
    if (!vs.url) return;
    this.add('ValueSet', vs.version ? `${vs.url}|${vs.version}` : vs.url, statusFinding(publicationOf(vs), source));
  }

  /** Adds the findings of another report (a nested evaluation answered once). */
  merge(other: StatusReport): void {
    for (const [k, v] of other.found) if (!this.found.has(k)) this.found.set(k, v);
  }

  /** `$validate-code`: one informational `business-rule` issue (tx type `status-check`) per finding, outside `message`. */
  issues(): TxIssue[] {
    return [...this.found.values()].map((f) => ({
      severity: 'information',
      code: 'business-rule',
      type: 'status-check',
      id: MESSAGE_IDS[f.finding],
      text: msg.statusReference(f.finding, f.type, f.canonical),
    }));
  }

  /** `$expand`: one `warning-<status>` parameter per finding, valued with the resource's canonical. */
  parameters(): ValueSetExpansionParameter[] {
    return [...this.found.values()].map((f) => ({ name: `warning-${f.finding}`, valueUri: f.canonical }));
  }

  private add(type: 'CodeSystem' | 'ValueSet', canonical: string, finding: StatusFinding | undefined): void {
    if (!finding) return;
    const key = `${type} ${canonical}`;
    if (!this.found.has(key)) this.found.set(key, { finding, type, canonical });
  }
}
