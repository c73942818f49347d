import type { ElementDefinition, ElementDefinitionConstraint, ElementDefinitionMapping } from '@medplum/fhirtypes';

/**
 * Applies a differential element to the snapshot element it constrains (profiling.html,
 * "Differential statements"): what the differential states replaces what the base says —
 * cardinality, types (with their profiles and target profiles), fixed and pattern values,
 * binding, maxLength, mustSupport, texts — while lists that accumulate through derivation
 * (constraints, mappings, aliases, conditions) are appended. A text that starts with `...`
 * continues the base's text (the R4 rule for markdown in differentials). `id`, `path` and
 * `base` stay the snapshot's.
 */
export function constrain(element: ElementDefinition, diff: ElementDefinition, profileUrl: string | undefined): ElementDefinition {
  const out: Record<string, unknown> = { ...element };
  for (const [key, value] of Object.entries(diff)) {
    if (value === undefined || KEPT.has(key)) continue;
    if (/^(fixed|pattern)[A-Z]/.test(key)) {
      // One fixed or pattern value: the differential's replaces any other the base had.
      for (const k of Object.keys(out)) if (/^(fixed|pattern)[A-Z]/.test(k)) delete out[k];
      out[key] = value;
    } else if (key === 'constraint') {
      out.constraint = appendConstraints(element.constraint, value as ElementDefinitionConstraint[], profileUrl);
    } else if (key === 'mapping') {
      out.mapping = appendUnique(element.mapping, value as ElementDefinitionMapping[], (m) => `${m.identity}\u0000${m.map}`);
    } else if (key === 'alias' || key === 'condition') {
      out[key] = appendUnique(element[key], value as string[], (v) => v);
    } else if (TEXTS.has(key) && typeof value === 'string') {
      out[key] = continued(element[key as 'short'], value);
    } else if (key === 'slicing' || key === 'binding') {
      out[key] = { ...(element[key] as object | undefined), ...(value as object) };
    } else {
      out[key] = structuredClone(value);
    }
  }
  return out as unknown as ElementDefinition;
}

/** Properties of the snapshot element a differential does not replace. */
const KEPT = new Set(['id', 'path', 'base']);
/** Markdown and string texts where a leading `...` continues the base's text. */
const TEXTS = new Set(['short', 'definition', 'comment', 'requirements', 'meaningWhenMissing']);

function continued(base: string | undefined, text: string): string {
  if (!text.startsWith('...')) return text;
  const rest = text.slice(3).trimStart();
  return base ? `${base}\r\n${rest}` : rest;
}

/** Constraints accumulate: a key already present is not repeated; new ones name the profile as source. */
function appendConstraints(
  base: ElementDefinitionConstraint[] | undefined,
  added: ElementDefinitionConstraint[],
  source: string | undefined,
): ElementDefinitionConstraint[] {
  const stamped = added.map((c) => (c.source || !source ? c : { ...c, source }));
  return appendUnique(base, stamped, (c) => c.key);
}

function appendUnique<T>(base: T[] | undefined, added: T[], key: (item: T) => string): T[] {
  const out = [...(base ?? [])];
  const seen = new Set(out.map(key));
  for (const item of added) {
    if (seen.has(key(item))) continue;
    seen.add(key(item));
    out.push(structuredClone(item));
  }
  return out;
}
