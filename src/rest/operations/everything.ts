import type { Operation, OperationHandler } from '../../core/operation.js';
import { badRequest } from '../../fhir/outcome.js';
import { loadDefinition } from '../../operations/definitions/index.js';
import { MAX_SEARCH_COUNT } from '../../core/repository.js';
import { parseDateRange } from '../../fhir/date-range.js';
import { checkedCompartmentTypes, searchBundle } from '../search.js';

interface EverythingInput {
  _since?: string;
  _type?: string[];
  _count?: number;
  _offset?: number;
}

/**
 * `[base]/Patient/<id>/$everything` and `[base]/Encounter/<id>/$everything`
 * (docs/rest.md#everything): the resource and every resource of its compartment the caller can
 * see, plus every resource those reference (practitioners, organizations, locations, …; the
 * same `_include=*` a search runs, with the same access rights), as a searchset Bundle paged like
 * a search (`next`/`previous` links call the operation again with `_offset`). Unless `_count`
 * says otherwise a page holds up to 1000 compartment resources (R4: the whole record in one
 * Bundle when possible). GET, or POST with a Parameters body or none at all.
 */
export function everythingOperation(compartment: 'Patient' | 'Encounter'): Operation {
  const handler: OperationHandler = async (ctx, input: EverythingInput, target) => {
    const id = target.id as string;
    await ctx.repo.read(compartment, id); // 404 / 410 as for read: tenancy decides first
    const types = (input._type ?? []).flatMap((v) => v.split(',').map((t) => t.trim()).filter(Boolean));
    const count = wholeNumber('_count', input._count) ?? MAX_SEARCH_COUNT;
    const offset = wholeNumber('_offset', input._offset) ?? 0;
    const params: Array<[string, string]> = [
      ['_count', String(Math.min(count, MAX_SEARCH_COUNT))],
      ['_offset', String(offset)],
      ['_include', '*'],
      ['_total', 'accurate'], // the operation has no _total: the record's size is always counted
    ];
    const linkParams: Array<[string, string]> = [];
    if (input._since !== undefined) {
      const low = parseDateRange(input._since)?.low;
      if (!low) throw badRequest(`Invalid value '${input._since}' for _since`, '_since');
      params.push(['_lastUpdated', `ge${low}`]);
      linkParams.push(['_since', input._since]);
    }
    if (types.length > 0) linkParams.push(['_type', types.join(',')]);
    if (input._count !== undefined) linkParams.push(['_count', String(input._count)]);
    const scope = { resourceType: compartment, id, ...(types.length > 0 ? { types: checkedCompartmentTypes(types, compartment) } : {}) };
    const url = `${ctx.fhirBaseUrl}/${compartment}/${id}/$everything`;
    return { return: await searchBundle(ctx, { resourceType: '*', params, compartment: scope }, url, linkParams) };
  };
  return { definition: loadDefinition(compartment === 'Patient' ? 'Patient-everything' : 'Encounter-everything'), handler, emptyPost: true };
}

function wholeNumber(name: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0) throw badRequest(`Invalid value '${value}' for ${name}`, name);
  return value;
}
