import type { CodeableConcept, Coding, ConceptMap } from '@medplum/fhirtypes';
import { badRequest, notFound } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { conceptMapsFor, resolveConceptMap } from '../engine/concept-maps.js';
import { codingText, msg } from '../messages.js';
import { termContext } from '../engine/request-context.js';
import { translateCoding, translated, type TranslateMatch, type TranslateQuery } from '../engine/translate.js';
import { splitCanonical } from '../versions.js';
import { loadDefinition } from '../../operations/definitions/index.js';

interface TranslateInput {
  url?: string;
  conceptMap?: ConceptMap;
  conceptMapVersion?: string;
  code?: string;
  system?: string;
  version?: string;
  source?: string;
  coding?: Coding;
  codeableConcept?: CodeableConcept;
  target?: string;
  targetsystem?: string;
  dependency?: Array<{ element?: string; concept?: CodeableConcept }>;
  reverse?: boolean;
  sourceCode?: string;
  sourceSystem?: string;
  sourceVersion?: string;
  sourceCoding?: Coding;
  sourceCodeableConcept?: CodeableConcept;
  sourceScope?: string;
  targetCode?: string;
  targetCoding?: Coding;
  targetCodeableConcept?: CodeableConcept;
  targetScope?: string;
  targetSystem?: string;
  'tx-resource'?: unknown[];
}

type Given = { system?: string; version?: string; code?: string };

/** `ConceptMap/$translate` (docs/terminology.md#translate), type and instance level. */
export function translateOperation(env: TerminologyEnv): Operation {
  return {
    definition: loadDefinition('ConceptMap-translate'),
    async handler(ctx, input: TranslateInput, target) {
      const tc = await termContext(env, ctx, input);
      const inline = (input['tx-resource'] ?? []).filter((r): r is ConceptMap => (r as ConceptMap)?.resourceType === 'ConceptMap');
      const { codings, reverse, otherSystem } = whatToTranslate(input);
      const more = (canonical: string) => resolveConceptMap(tc.repo, inline, canonical);

      let explicit: ConceptMap[] | undefined;
      if (target.level === 'instance') explicit = [await tc.repo.read<ConceptMap>('ConceptMap', target.id as string)];
      else if (input.conceptMap) explicit = [input.conceptMap];
      else if (input.url) {
        const map = await resolveConceptMap(tc.repo, inline, input.url, input.conceptMapVersion);
        if (!map) throw notFound(msg.conceptMapNotFound(input.url));
        explicit = [map];
      }
      const inScope = scopeFilter(input.sourceScope ?? input.source, input.targetScope ?? input.target);

      const matches: TranslateMatch[] = [];
      for (const coding of codings) {
        const maps = explicit ?? (await conceptMapsFor(tc.repo, inline, reverse ? 'target' : 'source', coding.system));
        const query: TranslateQuery = { coding, reverse, otherSystem, dependencies: input.dependency ?? [] };
        matches.push(...(await translateCoding(maps.filter(inScope), query, more)));
      }
      const result = translated(matches);
      return {
        result,
        message: result ? undefined : msg.noTranslation(codings.map((c) => codingText(c.system, c.version, c.code)).join(', ')),
        match: matches.length > 0 ? matches : undefined,
      };
    },
  };
}

/**
 * The codings to translate and the direction. R4: `code`+`system`, `coding` or
 * `codeableConcept`, reversed by `reverse=true`; the ecosystem's names: `sourceCode`/`sourceSystem`/…
 * forwards, `targetCode`/`targetCoding`/`targetCodeableConcept` in reverse.
 */
function whatToTranslate(input: TranslateInput): {
  codings: Array<{ system: string; version?: string; code: string }>;
  reverse: boolean;
  otherSystem: string | undefined;
} {
  const forward = [input.code, input.sourceCode, input.coding, input.sourceCoding, input.codeableConcept, input.sourceCodeableConcept];
  const backward = [input.targetCode, input.targetCoding, input.targetCodeableConcept];
  const byTarget = backward.some((v) => v !== undefined);
  if (byTarget && forward.some((v) => v !== undefined)) throw badRequest('Specify either a source code or a target code, not both');
  let given: Given[];
  let otherSystem: string | undefined;
  if (byTarget) {
    given = codingsOf(input.targetCoding, input.targetCode, input.targetSystem, undefined, input.targetCodeableConcept);
    otherSystem = input.sourceSystem ?? input.system;
  } else {
    given = codingsOf(
      input.sourceCoding ?? input.coding,
      input.sourceCode ?? input.code,
      input.sourceSystem ?? input.system,
      input.sourceVersion ?? input.version,
      input.sourceCodeableConcept ?? input.codeableConcept,
    );
    otherSystem = input.targetSystem ?? input.targetsystem;
  }
  const withCode = given.filter((c) => c.code);
  if (withCode.length === 0) throw badRequest('No code specified');
  const codings = withCode.filter((c): c is { system: string; version?: string; code: string } => !!c.system);
  if (codings.length === 0) throw badRequest('No code system specified');
  return { codings, reverse: byTarget || input.reverse === true, otherSystem };
}

function codingsOf(coding: Coding | undefined, code: string | undefined, system: string | undefined, version: string | undefined, cc: CodeableConcept | undefined): Given[] {
  if (coding) return [{ system: coding.system, version: coding.version, code: coding.code }];
  if (code !== undefined) return [{ system, version, code }];
  return (cc?.coding ?? []).map((c) => ({ system: c.system, version: c.version, code: c.code }));
}

/** `source`/`target` (value sets): a map applies when its own source/target scope names the same value set. */
function scopeFilter(source: string | undefined, target: string | undefined): (map: ConceptMap) => boolean {
  const same = (wanted: string | undefined, stated: string | undefined) =>
    wanted === undefined || (stated !== undefined && splitCanonical(stated).url === splitCanonical(wanted).url);
  return (map) => same(source, map.sourceUri ?? map.sourceCanonical) && same(target, map.targetUri ?? map.targetCanonical);
}
