import type { ValueSet } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { parseLanguages } from '../display.js';
import { expandValueSet } from '../expand.js';
import { acceptLanguage, termContext } from '../request-context.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import { requireValueSet } from './target.js';

interface ExpandInput {
  url?: string;
  valueSet?: ValueSet;
  valueSetVersion?: string;
  filter?: string;
  offset?: number;
  count?: number;
  includeDesignations?: boolean;
  includeDefinition?: boolean;
  activeOnly?: boolean;
  excludeNested?: boolean;
  displayLanguage?: string;
  'tx-resource'?: unknown[];
}

/** Inputs echoed in `expansion.parameter` when given, with their value[x] key. */
const ECHOED: Array<[keyof ExpandInput, string]> = [
  ['filter', 'valueString'],
  ['offset', 'valueInteger'],
  ['count', 'valueInteger'],
  ['includeDesignations', 'valueBoolean'],
  ['includeDefinition', 'valueBoolean'],
  ['activeOnly', 'valueBoolean'],
  ['excludeNested', 'valueBoolean'],
  ['displayLanguage', 'valueCode'],
];

/** `ValueSet/$expand` (docs/terminology.md#expand), type and instance level; answers the ValueSet itself. */
export function expandOperation(env: TerminologyEnv): Operation {
  return {
    definition: loadDefinition('ValueSet-expand'),
    alsoInstance: true,
    async handler(ctx, input: ExpandInput, target) {
      const tc = await termContext(env, ctx, input);
      if ((input.offset ?? 0) < 0 || (input.count ?? 0) < 0) throw badRequest('offset and count must not be negative');
      const vs = await requireValueSet(tc, target, input);
      const echo = ECHOED.filter(([name]) => input[name] !== undefined).map(
        ([name, key]) => ({ name, [key]: input[name] }),
      );
      const expanded = await expandValueSet(tc, vs, {
        offset: input.offset ?? 0,
        count: input.count,
        filter: input.filter?.trim() || undefined,
        activeOnly: input.activeOnly === true,
        includeDesignations: input.includeDesignations === true,
        includeDefinition: input.includeDefinition === true,
        languages: parseLanguages(input.displayLanguage ?? acceptLanguage(ctx)),
        echo,
      });
      return { return: expanded };
    },
  };
}
