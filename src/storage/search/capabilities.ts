import type { SearchCapabilities, SearchParameterCapability } from '../../core/search.js';
import { isResourceType, resourceTypes, searchParametersFor } from '../../fhir/definitions.js';
import { TEXT_PARAMETERS, checkKnown } from './query/filters.js';
import { MODIFIERS } from './query/conditions.js';
import { COMPARTMENT_DEFINITIONS } from './query/compartment.js';
import { compositeComponents, identifierParameter, tableFor } from './parameters.js';

/**
 * What the search builder accepts, for the CapabilityStatement (docs/rest.md#metadata): a
 * parameter is listed when `checkKnown` accepts it, with the modifiers the builder accepts for
 * its table — the same functions a search goes through, so the two cannot disagree.
 */
export function searchCapabilities(): SearchCapabilities {
  const cache = new Map<string, SearchParameterCapability[]>();
  return {
    parameters(type) {
      let list = cache.get(type);
      if (!list) {
        list = parametersOf(type);
        // Reverse chaining, where some type can reference this one (docs/rest.md#chaining-and-includes).
        if (this.revIncludes(type).length > 0) list.push({ name: '_has', type: 'special', modifiers: [] });
        list.push({ name: '_filter', type: 'special', modifiers: [] }); // docs/rest.md#filter
        cache.set(type, list);
      }
      return list;
    },
    includes(type) {
      return referenceParameters(type).map((code) => `${type}:${code}`);
    },
    revIncludes(type) {
      const out: string[] = [];
      for (const source of [...resourceTypes()].sort()) {
        for (const code of referenceParameters(source)) {
          const targets = ((searchParametersFor(source).get(code)?.target ?? []) as string[]).filter(isResourceType);
          if (targets.includes(type)) out.push(`${source}:${code}`);
        }
      }
      return out;
    },
    compartments() {
      return Object.values(COMPARTMENT_DEFINITIONS);
    },
  };
}

function accepted(type: string, code: string): boolean {
  try {
    checkKnown(type, code);
    return true;
  } catch {
    return false;
  }
}

function parametersOf(type: string): SearchParameterCapability[] {
  const out: SearchParameterCapability[] = [
    { name: '_id', type: 'token', modifiers: [] },
    { name: '_lastUpdated', type: 'date', modifiers: [] },
  ];
  for (const [code, sp] of searchParametersFor(type)) {
    if (code === '_id' || code === '_lastUpdated' || !accepted(type, code)) continue;
    const table = tableFor(sp);
    const modifiers = (table ? MODIFIERS[table] : []).filter((m) => m !== 'of-type' || identifierParameter(sp));
    const entry: SearchParameterCapability = { name: code, type: sp.type ?? 'special', modifiers: table && !TEXT_PARAMETERS.has(code) ? ['missing', ...modifiers] : [] };
    if (sp.url) entry.definition = sp.url;
    const components = compositeComponents(sp);
    if (components) entry.components = components.map((c) => c.table);
    if (sp.type === 'reference') {
      const targets = ((sp.target ?? []) as string[]).filter(isResourceType);
      if (targets.length > 0) {
        entry.modifiers.push('type');
        entry.targets = targets;
      }
    }
    out.push(entry);
  }
  return out;
}

function referenceParameters(type: string): string[] {
  return [...searchParametersFor(type)].filter(([code, sp]) => sp.type === 'reference' && accepted(type, code)).map(([code]) => code);
}
