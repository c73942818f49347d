import type { Coding } from '@medplum/fhirtypes';
import { badRequest, notFound } from '../../fhir/outcome.js';
import type { Operation, OperationValues } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { typed } from '../../operations/typed-value.js';
import { parseRequestLanguages } from '../engine/display.js';
import { lookupCode, type LookupResult } from '../engine/lookup.js';
import { acceptLanguage, termContext } from '../engine/request-context.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import { instanceCodeSystem, requireCodeSystem } from './target.js';
import { cachedAnswer, keptAnswers } from './answer-cache.js';
import { lookupAnswerText } from './lookup-answer.js';
import { PreparedAnswer } from '../../core/reusable-answer.js';

interface LookupInput {
  code?: string;
  system?: string;
  version?: string;
  coding?: Coding;
  displayLanguage?: string;
  property?: string[];
  'tx-resource'?: unknown[];
}

/** `CodeSystem/$lookup` (docs/terminology.md#lookup), type and instance level. */
export function lookupOperation(env: TerminologyEnv): Operation {
  const definition = loadDefinition('CodeSystem-lookup');
  return {
    definition,
    alsoInstance: true,
    keptAnswers: keptAnswers(env, 'lookup'),
    async handler(ctx, input: LookupInput, target) {
      const tc = await termContext(env, ctx, input);
      const code = input.code ?? input.coding?.code;
      let cs;
      if (target.level === 'instance') {
        cs = await instanceCodeSystem(tc, target);
        const system = input.coding?.system ?? input.system;
        if (system && system !== cs.url) throw notFound();
      } else {
        const system = input.system ?? input.coding?.system;
        if (!system) throw badRequest('No code system specified');
        if (!code) throw badRequest('No code specified');
        cs = await requireCodeSystem(tc, system, input.version ?? input.coding?.version);
      }
      if (!code) throw badRequest('No code specified');
      const language = input.displayLanguage ?? acceptLanguage(ctx);
      const question = `lookup\u0000${code}\u0000${input.displayLanguage ?? ''}\u0000${language ?? ''}\u0000${input.property?.join('\u0001') ?? ''}`;
      return cachedAnswer(tc, cs, definition, question, async () => {
        const r = await lookupCode(tc, cs, code, parseRequestLanguages(language, input.displayLanguage), input.property);
        // Written straight to JSON text (the generic formatter's text, without its objects).
        const text = lookupAnswerText(r);
        if (text !== undefined) return new PreparedAnswer(text, false);
        return lookupOutput(r);
      });
    },
  };
}

/** The handler's output of a lookup, as the generic formatter takes it (lookup-answer.ts writes the same text directly). */
export function lookupOutput(r: LookupResult): OperationValues {
  return {
    name: r.name,
    version: r.version,
    // The seed makes display required: a concept without one is shown by its code.
    display: r.display ?? r.code,
    definition: r.definition,
    designation: r.designation.length > 0 ? r.designation : undefined,
    property:
      r.property.length > 0
        ? r.property.map((p) => ({ code: p.code, 'code-display': p.codeDisplay, value: typed(p.value.type, p.value.value), description: p.description }))
        : undefined,
    abstract: r.abstract,
    code: r.code,
    system: r.system,
    'used-supplement': r.usedSupplements.length > 0 ? r.usedSupplements : undefined,
  };
}
