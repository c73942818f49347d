import type { StructureDefinition } from '@medplum/fhirtypes';
import type { Operation, OperationHandler } from '../core/operation.js';
import { badRequest, notFound } from '../fhir/outcome.js';
import { loadDefinition } from '../operations/definitions/index.js';
import { resolveStructureDefinition } from './canonical-resolver.js';
import { definitionsNeeded } from './definitions-needed.js';
import { coreDefinition, generateSnapshot } from './snapshot/index.js';

interface SnapshotInput {
  definition?: StructureDefinition;
  url?: string;
}

/**
 * `StructureDefinition/$snapshot` (R4 StructureDefinition-snapshot, docs/profiles.md#snapshot):
 * the StructureDefinition given as `definition`, named by `url` (`url|version` for one version;
 * else the latest held; an R4 core definition when none is held), or the instance the URL names, returned with the snapshot generated
 * from its differential. Nothing is stored. The definitions it derives from are those the
 * caller reads (its project's and the shared content) and the R4 core ones.
 */
export function snapshotOperation(maxElements: number): Operation {
  const handler: OperationHandler = async (ctx, input: SnapshotInput, target) => {
    let profile: StructureDefinition | undefined;
    if (target.id !== undefined) {
      if (input.definition || input.url) throw badRequest('$snapshot on an instance takes neither definition nor url: the instance is the StructureDefinition');
      profile = await ctx.repo.read<StructureDefinition>('StructureDefinition', target.id);
    } else if (input.definition && input.url) {
      throw badRequest("Give the StructureDefinition either as 'definition' or by 'url', not both");
    } else if (input.definition) {
      profile = input.definition;
    } else if (input.url) {
      profile = (await resolveStructureDefinition(ctx.repo, input.url)) ?? coreDefinition(input.url);
      if (!profile) throw notFound(`StructureDefinition ${input.url} not found`);
    } else {
      throw badRequest("Give the StructureDefinition as 'definition', or name it by 'url'");
    }
    const fetch = await definitionsNeeded((c) => resolveStructureDefinition(ctx.repo, c), profile);
    return { return: generateSnapshot(profile, fetch, { maxElements }) };
  };
  return { definition: loadDefinition('StructureDefinition-snapshot'), handler };
}
