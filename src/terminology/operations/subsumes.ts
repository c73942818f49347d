import type { Coding } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { termContext } from '../engine/request-context.js';
import { subsumes } from '../engine/subsumes.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import { instanceCodeSystem, requireCodeSystem } from './target.js';
import { cachedAnswer, keptAnswers } from './answer-cache.js';

interface SubsumesInput {
  system?: string;
  version?: string;
  codeA?: string;
  codeB?: string;
  codingA?: Coding;
  codingB?: Coding;
  'tx-resource'?: unknown[];
}

/** `CodeSystem/$subsumes` (docs/terminology.md#subsumes), type and instance level. */
export function subsumesOperation(env: TerminologyEnv): Operation {
  const definition = loadDefinition('CodeSystem-subsumes');
  return {
    definition,
    alsoInstance: true,
    keptAnswers: keptAnswers(env, 'subsumes'),
    async handler(ctx, input: SubsumesInput, target) {
      const tc = await termContext(env, ctx, input);
      const codeA = input.codeA ?? input.codingA?.code;
      const codeB = input.codeB ?? input.codingB?.code;
      if (!codeA || !codeB) throw badRequest('Must specify codeA and codeB parameters');
      const a = input.codingA?.system;
      const b = input.codingB?.system;
      if (a && b && a !== b) throw badRequest('codingA and codingB must have the same system');
      let cs;
      if (target.level === 'instance') {
        cs = await instanceCodeSystem(tc, target);
      } else {
        const system = input.system ?? a ?? b;
        if (!system) throw badRequest('No code system specified');
        cs = await requireCodeSystem(tc, system, input.version ?? input.codingA?.version ?? input.codingB?.version);
      }
      return cachedAnswer(tc, cs, definition, `subsumes\u0000${codeA}\u0000${codeB}`, async () => ({ outcome: await subsumes(tc, cs, codeA, codeB) }));
    },
  };
}
