import type { Coding } from '@medplum/fhirtypes';
import { badRequest } from '../../fhir/outcome.js';
import type { Operation } from '../../core/operation.js';
import type { TerminologyEnv } from '../types.js';
import { importIntoCodeSystem } from '../store/import.js';
import { msg } from '../messages.js';
import { termContext } from '../engine/request-context.js';
import { resolveCodeSystem } from '../engine/resolve.js';
import { isBuiltin } from '../providers/builtin.js';
import { loadDefinition } from '../../operations/definitions/index.js';

interface ImportInput {
  system: string;
  concept?: Coding[];
  property?: Array<{ code: string; property: string; value: unknown }>;
  designation?: Array<{ code: string; language?: string; use?: Coding; value: string }>;
}

/**
 * `CodeSystem/$import` (docs/terminology.md#import): project admins add concepts, properties and
 * designations to a code system of their project (super admins: to any, shared ones included).
 * Answers the CodeSystem.
 */
export function importOperation(env: TerminologyEnv): Operation {
  return {
    definition: loadDefinition('CodeSystem-import'),
    async handler(ctx, input: ImportInput) {
      ctx.repo.scope.checkAdminister();
      const tc = await termContext(env, ctx, input);
      const cs = await resolveCodeSystem(tc, input.system);
      if (!cs) throw badRequest(msg.codeSystemNotFound(input.system));
      // docs/terminology.md#code-systems-built-in: answered from a grammar or registry, nothing stored.
      if (isBuiltin(cs)) throw badRequest(`The code system ${cs.url} is built in: nothing can be imported into it`);
      // Shared content is writable only by super admins (the tenancy rule, docs/auth.md#roles).
      ctx.repo.scope.checkWrite({ projectId: cs.projectId, resourceType: 'CodeSystem', id: cs.resourceId });
      const concepts = (input.concept ?? []).map((c, i) => {
        if (!c.code) throw badRequest('Concept has no code', `Parameters.parameter.concept[${i}]`);
        return { code: c.code, display: c.display };
      });
      await env.db.transaction((tx) =>
        importIntoCodeSystem(tx, cs, { concepts, properties: input.property ?? [], designations: input.designation ?? [] }),
      );
      return { return: await ctx.repo.read('CodeSystem', cs.resourceId) };
    },
  };
}
