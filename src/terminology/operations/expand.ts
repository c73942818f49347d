import type { ValueSet, ValueSetExpansionParameter } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { parseRequestLanguages, requestLanguage } from '../engine/display.js';
import { expandValueSet } from '../engine/expand.js';
import { acceptLanguage, termContext } from '../engine/request-context.js';
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
  excludeNotForUI?: boolean;
  excludePostCoordinated?: boolean;
  limitedExpansion?: boolean;
  displayLanguage?: string;
  property?: string[];
  designation?: string[];
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
  ['excludeNotForUI', 'valueBoolean'],
  ['excludePostCoordinated', 'valueBoolean'],
  ['limitedExpansion', 'valueBoolean'],
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
      const languages = parseRequestLanguages(requestLanguage(input.displayLanguage, vs, acceptLanguage(ctx)), input.displayLanguage);
      const echo: ValueSetExpansionParameter[] = ECHOED.filter(([name]) => input[name] !== undefined).map(([name, key]) => ({ name, [key]: input[name] }));
      if (languages.raw) echo.push({ name: 'displayLanguage', valueCode: languages.echo ?? languages.raw });
      for (const d of input.designation ?? []) echo.push({ name: 'designation', valueString: d });
      const expanded = await expandValueSet(tc, vs, {
        offset: input.offset ?? 0,
        count: input.count,
        paged: input.offset !== undefined || input.count !== undefined,
        filter: input.filter?.trim() || undefined,
        activeOnly: input.activeOnly === true,
        includeDesignations: input.includeDesignations === true,
        includeDefinition: input.includeDefinition === true,
        excludeNested: input.excludeNested === true,
        excludeNotForUI: input.excludeNotForUI === true,
        limitedExpansion: input.limitedExpansion === true,
        properties: input.property ?? [],
        designations: input.designation ?? [],
        languages,
        echo,
      });
      return { return: expanded };
    },
  };
}
