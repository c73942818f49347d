import type { ElementDefinition, ElementDefinitionConstraint } from '@medplum/fhirtypes';
import fhirpath from 'fhirpath';
import r4 from 'fhirpath/fhir-context/r4/index.js';
import { EvaluationTimeout, EvaluatorBusy, type FhirPathEvaluator } from '../../fhir/fhirpath-evaluator.js';
import { readDefinitionBundle } from '../../fhir/definitions.js';
import { isBaseTypeUrl } from '../profile-source.js';
import type { At, WalkContext } from './walk-context.js';

/**
 * Base invariants not evaluated: `ele-1` (every element has a value or children) is the
 * structural check's "empty object" rule already (src/fhir/validation), and the narrative rules
 * `txt-1`/`txt-2` need an XHTML checker the FHIRPath library does not have.
 */
const SKIPPED = new Set(['ele-1', 'txt-1', 'txt-2']);

const BEST_PRACTICE = 'http://hl7.org/fhir/StructureDefinition/elementdefinition-bestpractice';

/** A best-practice recommendation (`dom-6`: a resource should have narrative): advice, not validity; not evaluated. */
function isBestPractice(c: ElementDefinitionConstraint): boolean {
  return (c.extension ?? []).some((e) => e.url === BEST_PRACTICE && e.valueBoolean === true);
}

type Compiled = (resource: unknown, vars?: Record<string, unknown>) => unknown[];
const compiledCache = new Map<string, Compiled | Error>();
const COMPILED_CACHE_SIZE = 5_000;

function compiled(base: string, expression: string): Compiled | Error {
  const key = `${base}\n${expression}`;
  let fn = compiledCache.get(key);
  if (!fn) {
    try {
      fn = fhirpath.compile({ base, expression: singletonSafe(expression) }, r4, { traceFn: () => undefined });
    } catch (err) {
      fn = err instanceof Error ? err : new Error(String(err));
    }
    if (compiledCache.size >= COMPILED_CACHE_SIZE) compiledCache.clear();
    compiledCache.set(key, fn);
  }
  return fn;
}

/**
 * R4's expressions use `as(T)`, which FHIRPath defines on one item only (the library throws on
 * several, e.g. dom-3's `descendants().where(as(canonical) = …)` over a whole resource); `ofType(T)`
 * selects the same values from any number of items (as src/fhir/definitions.ts does for search).
 */
function singletonSafe(expression: string): string {
  return expression.replace(/(^|[.(\s])as\(/g, '$1ofType(');
}

/**
 * The FHIRPath invariants (`constraint.expression`) of one element on one value. A constraint of
 * a base type or resource is evaluated only in `base` mode (a profile's snapshot repeats them);
 * one that fails is an issue of its severity; one that cannot be evaluated is a warning naming it.
 */
export async function checkInvariants(ctx: WalkContext, def: ElementDefinition, value: unknown, at: At, mode: 'base' | 'profile'): Promise<void> {
  const { base, expr } = at;
  for (const c of def.constraint ?? []) {
    if (!c.expression || !c.key || SKIPPED.has(c.key) || isBestPractice(c)) continue;
    if (mode === 'profile' && c.source && isBaseTypeUrl(c.source)) continue;
    if (c.expression.length > ctx.limits.maxExpressionLength) {
      ctx.add('warning', 'too-costly', `Constraint ${c.key} was not evaluated: its expression is longer than ${ctx.limits.maxExpressionLength} characters (LATTICE_PROFILE_MAX_EXPRESSION)`, expr);
      continue;
    }
    ctx.countInvariant();
    const vars = { resource: at.resource ?? ctx.root, rootResource: at.rootResource ?? ctx.root };
    let result: unknown[];
    try {
      if (ctx.fhirpath && !isDefinitionExpression(c.expression)) {
        // Written by whoever wrote the profile, so of any cost: in the FHIRPath thread, with its time limit.
        const answer = await inThread(ctx.fhirpath, value, base, c.expression, vars);
        if (answer === 'stopped') {
          ctx.add('error', 'too-costly', `Constraint ${c.key} was not evaluated: it ran longer than ${ctx.fhirpath.timeoutMs} ms (LATTICE_FHIRPATH_TIMEOUT)`, expr);
          continue;
        }
        if ('error' in answer) throw new Error(answer.error);
        result = answer.values;
      } else {
        const fn = compiled(base, c.expression);
        if (fn instanceof Error) throw fn;
        result = fn(value, vars);
      }
    } catch (err) {
      // Once per constraint and validation: the same expression fails the same way on every item.
      if (ctx.unevaluable.has(c.key)) continue;
      ctx.unevaluable.add(c.key);
      ctx.add('warning', 'invariant', `Constraint ${c.key} could not be evaluated: ${err instanceof Error ? err.message : String(err)}`, expr);
      continue;
    }
    if (result.length === 1 && result[0] === false) {
      const severity = c.severity === 'warning' ? 'warning' : 'error';
      ctx.add(severity, 'invariant', `Constraint ${c.key} is not met: ${c.human ?? c.expression}`, expr);
    }
  }
}

/** The evaluation in the FHIRPath thread; `stopped` past its time limit (or its wait). */
async function inThread(fhirpath: FhirPathEvaluator, value: unknown, base: string, expression: string, vars: Record<string, unknown>): Promise<{ values: unknown[] } | { error: string } | 'stopped'> {
  try {
    return await fhirpath.evaluateValues(value, singletonSafe(expression), { base, vars });
  } catch (err) {
    if (err instanceof EvaluationTimeout || err instanceof EvaluatorBusy) return 'stopped';
    throw err;
  }
}

let definitionExpressions: Set<string> | undefined;

/**
 * True for an expression some R4 definition states (a type's, a resource's, a core profile's or
 * extension's invariant): chosen by no caller and of known cost, evaluated here. Any other
 * expression goes to the FHIRPath thread.
 */
function isDefinitionExpression(expression: string): boolean {
  if (!definitionExpressions) {
    const found = new Set<string>();
    for (const file of ['profiles-types.json', 'profiles-resources.json', 'profiles-others.json', 'extension-definitions.json', 'profiles-medplum.json']) {
      for (const r of readDefinitionBundle(file)) {
        if (r.resourceType !== 'StructureDefinition') continue;
        for (const e of r.snapshot?.element ?? []) for (const c of e.constraint ?? []) if (c.expression) found.add(c.expression);
      }
    }
    definitionExpressions = found;
  }
  return definitionExpressions.has(expression);
}
