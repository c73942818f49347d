import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import { issue } from '../outcome.js';

const ABSOLUTE = /^[A-Za-z][A-Za-z0-9+.-]*:\S/;

/**
 * The structural rules of one Extension (extensibility.html, ext-1): it has either a `value[x]`
 * or nested `extension`s, not both and not neither; its `url` is absolute unless it is a
 * sub-extension of a complex extension (whose url may be a plain name such as `ombCategory`).
 * What an extension means — its definition, context, value type — is the profiles' concern.
 */
export function extensionIssues(ext: Record<string, unknown>, expr: string, nested: boolean): OperationOutcomeIssue[] {
  const out: OperationOutcomeIssue[] = [];
  // `_valueString` alone (the value's own extensions, no value) still makes a value element.
  const hasValue = Object.keys(ext).some((k) => /^_?value[A-Z]/.test(k) && ext[k] !== undefined);
  const hasChildren = Array.isArray(ext.extension) && ext.extension.length > 0;
  if (hasValue && hasChildren) out.push(issue('invariant', 'ext-1: An extension must have either extensions or value[x], not both', expr));
  else if (!hasValue && !hasChildren) out.push(issue('invariant', 'ext-1: An extension must have either extensions or value[x]: it has neither', expr));
  if (typeof ext.url === 'string' && !nested && !ABSOLUTE.test(ext.url)) {
    out.push(issue('value', `Extension url '${ext.url}' must be an absolute URL`, `${expr}.url`));
  }
  return out;
}
