import type { Coding } from '@medplum/fhirtypes';
import { badRequest, forbidden } from '../../fhir/outcome.js';
import type { Operation } from '../../operations/operation.js';
import { importIntoCodeSystem } from '../import.js';
import { msg } from '../messages.js';
import { termContext } from '../request-context.js';
import { resolveCodeSystem } from '../resolve.js';
import { terminologyDefinition } from './definitions.js';

interface ImportInput {
  system: string;
  concept?: Coding[];
  property?: Array<{ code: string; property: string; value: unknown }>;
  designation?: Array<{ code: string; language?: string; use?: Coding; value: string }>;
}

/**
 * `CodeSystem/$import` (behavior.md §5.6): project admins add concepts, properties and
 * designations to a code system of their project (super admins: to any, shared ones included).
 * Answers the CodeSystem.
 */
export function importOperation(): Operation {
  return {
    definition: terminologyDefinition('CodeSystem-import'),
    async handler(ctx, input: ImportInput) {
      if (!ctx.auth.superAdmin && !ctx.auth.projectAdmin) throw forbidden();
      const tc = await termContext(ctx, input);
      const cs = await resolveCodeSystem(tc, input.system);
      if (!cs) throw badRequest(msg.codeSystemNotFound(input.system));
      // Shared content (project NULL) is writable only by super admins (behavior.md §2).
      if (!ctx.auth.superAdmin && cs.projectId !== ctx.auth.projectId) throw forbidden();
      const concepts = (input.concept ?? []).map((c, i) => {
        if (!c.code) throw badRequest('Concept has no code', `Parameters.parameter.concept[${i}]`);
        return { code: c.code, display: c.display };
      });
      await ctx.services.db.transaction((tx) =>
        importIntoCodeSystem(tx, cs, { concepts, properties: input.property ?? [], designations: input.designation ?? [] }),
      );
      return { return: await ctx.repo.read('CodeSystem', cs.resourceId) };
    },
  };
}
