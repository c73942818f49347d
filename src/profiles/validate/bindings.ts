import type { ElementDefinition } from '@medplum/fhirtypes';
import type { BindingChecker, BindingScope } from '../../core/validation.js';
import { isObject } from '../../fhir/json.js';
import { baseElement } from './base-element.js';
import type { PendingBinding, WalkContext } from './walk-context.js';

/**
 * Notes a coded value under a `required` or `extensible` binding of a profile (preferred and
 * example bindings are not checked; a binding the base definition already has is the structural
 * check's). Checked all at once by {@link checkBindings}.
 */
export function collectBinding(ctx: WalkContext, def: ElementDefinition, type: string, value: unknown, expr: string): void {
  const binding = def.binding;
  if (!binding?.valueSet || (binding.strength !== 'required' && binding.strength !== 'extensible')) return;
  const base = baseElement(def);
  if (base?.binding?.valueSet === binding.valueSet && base.binding.strength === binding.strength) return;
  const codes = codesOf(type, value);
  const textOnly = codes.length === 0 && isObject(value) && typeof value.text === 'string';
  if (codes.length === 0 && !textOnly) return;
  const concept = type === 'CodeableConcept' || (isObject(value) && Array.isArray(value.coding));
  ctx.bindings.push({ valueSet: binding.valueSet, strength: binding.strength, expression: expr, codes, textOnly, concept });
}

function codesOf(type: string, value: unknown): PendingBinding['codes'] {
  const coding = (c: unknown) => (isObject(c) && typeof c.code === 'string' ? [{ system: typeof c.system === 'string' ? c.system : undefined, code: c.code }] : []);
  if (typeof value === 'string') return [{ system: undefined, code: value }];
  if (!isObject(value)) return [];
  if (type === 'CodeableConcept' || Array.isArray(value.coding)) return Array.isArray(value.coding) ? value.coding.flatMap(coding) : [];
  return coding(value);
}

/**
 * Asks the terminology engine once for every bound value set: a required binding not met is an
 * error, an extensible one a warning (a CodeableConcept with text only meets it); a value set the
 * server cannot resolve or expand is a warning that the code was not checked.
 */
export async function checkBindings(ctx: WalkContext, checker: BindingChecker, scope: BindingScope): Promise<void> {
  if (ctx.bindings.length === 0) return;
  const members = await checker.codesOf([...new Set(ctx.bindings.map((b) => b.valueSet))], scope);
  for (const b of ctx.bindings) {
    const codes = members.get(b.valueSet);
    if (!codes) {
      ctx.add('warning', 'not-supported', `The value set ${b.valueSet} of this ${b.strength} binding could not be resolved or expanded: the code was not checked`, b.expression);
      continue;
    }
    if (b.textOnly) {
      if (b.strength === 'required') ctx.add('error', 'code-invalid', `No code given: the required binding to ${b.valueSet} needs one`, b.expression);
      continue;
    }
    if (b.codes.some((c) => codes.has(c.system, c.code))) continue;
    const shown = b.codes.map((c) => (c.system ? `${c.system}#${c.code}` : c.code)).join("', '");
    if (b.strength === 'required') ctx.add('error', 'code-invalid', `'${shown}' is not in the value set ${b.valueSet} (required binding)`, b.expression, b.concept ? 'Terminology_TX_NoValid_1_CC' : undefined);
    else ctx.add('warning', 'code-invalid', `'${shown}' is not in the value set ${b.valueSet} (extensible binding)`, b.expression);
  }
}
