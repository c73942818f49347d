import type { ValueSetExpansionContains } from '@medplum/fhirtypes';
import type { ResourceRepository } from '../../core/repository.js';
import type { BindingChecker, ValueSetCodes } from '../../core/validation.js';
import { subscribeChanges } from '../../storage/change-feed.js';
import { parseLanguages } from './display.js';
import { expandValueSet } from './expand.js';
import { TERMINOLOGY_CHANNEL } from '../providers/fhir/index-cache.js';
import { resolveCodeSystem, resolveValueSet } from './resolve.js';
import type { TermContext, TerminologyEnv } from '../types.js';
import { parseVersionRules } from '../versions.js';

/**
 * The codes of the value sets that `required` bindings name (docs/rest.md#validation), for
 * resource validation. Each value set is resolved among the shared content (`shared` sees
 * nothing else; base R4 value sets are loaded on first use) and expanded once with the engine's
 * own `$expand`; the codes stay in memory — no database read once seen — until any CodeSystem or
 * ValueSet is written on any node (the write's one announcement on `lattice_terminology`,
 * index-cache.ts, heard by every node through storage/change-feed.ts). A value set that cannot
 * be resolved or fully expanded (unknown or incomplete code systems, too large) gives
 * undefined: not checked.
 */
export function createBindingChecker(env: TerminologyEnv & { onClose(fn: () => void): void }, shared: ResourceRepository): BindingChecker {
  const cache = new Map<string, ValueSetCodes | undefined>();
  let generation = 0;
  // `-`: the listening connection is lost, nothing is kept until it is back (`*`): a change
  // missed meanwhile must not leave stale codes behind (docs/deployment.md#caches).
  let heard = true;
  const invalidate = (payload?: string) => {
    generation++;
    cache.clear();
    if (payload === '-' || payload === '*') heard = payload === '*';
  };
  const listening = subscribeChanges(env.db, TERMINOLOGY_CHANNEL, invalidate).then(
    (unsubscribe) => env.onClose(unsubscribe),
    (err: unknown) => env.log.error({ err }, 'terminology: cannot listen for changes'),
  );
  return {
    async codesOf(valueSets, scope) {
      await listening;
      const out = new Map<string, ValueSetCodes | undefined>();
      // With a scope, a value set is resolved as the caller sees it (its project's own first),
      // cached per project: any CodeSystem/ValueSet write clears the whole cache as above.
      const repo = scope?.repo ?? shared;
      for (const canonical of new Set(valueSets)) {
        const key = scope ? `${scope.key} ${canonical}` : canonical;
        if (cache.has(key)) {
          out.set(canonical, cache.get(key));
          continue;
        }
        // A change heard while expanding may have made the answer stale: expand again (resolving a
        // base value set the first time stores it, which is such a change); keep only a stable answer.
        let codes: ValueSetCodes | undefined;
        for (let attempt = 0; attempt < 3; attempt++) {
          const seen = generation;
          codes = await expandCodes(env, repo, canonical);
          if (seen === generation) {
            if (heard) cache.set(key, codes);
            break;
          }
        }
        out.set(canonical, codes);
      }
      return out;
    },
  };
}

async function expandCodes(env: TerminologyEnv, shared: ResourceRepository, canonical: string): Promise<ValueSetCodes | undefined> {
  const tc: TermContext = {
    db: env.db,
    repo: shared,
    env,
    log: env.log,
    inlineCodeSystems: [],
    inlineValueSets: [],
    supplements: [],
    memo: new Map(),
    versionRules: parseVersionRules({}),
  };
  try {
    const vs = await resolveValueSet(tc, canonical);
    if (!vs) return undefined;
    const expanded = await expandValueSet(tc, vs, {
      offset: 0,
      count: undefined,
      filter: undefined,
      activeOnly: false,
      includeDesignations: false,
      includeDefinition: false,
      languages: parseLanguages(undefined),
      echo: [],
    });
    // Codes of a code system the server holds only in part (not-present, fragment, example) are unknown, not invalid.
    for (const p of expanded.expansion?.parameter ?? []) {
      if (p.name !== 'used-codesystem' || !p.valueUri) continue;
      const cs = await resolveCodeSystem(tc, p.valueUri);
      if (cs?.content !== 'complete') return undefined;
    }
    const pairs = new Set<string>();
    const codes = new Set<string>();
    const walk = (list: ValueSetExpansionContains[] | undefined) => {
      for (const c of list ?? []) {
        if (c.code) {
          codes.add(c.code);
          pairs.add(`${c.system ?? ''}|${c.code}`);
        }
        walk(c.contains);
      }
    };
    walk(expanded.expansion?.contains);
    if (codes.size === 0) return undefined;
    return { has: (system, code) => (system === undefined ? codes.has(code) : pairs.has(`${system}|${code}`)) };
  } catch (err) {
    env.log.debug({ err, valueSet: canonical }, 'binding value set not checkable');
    return undefined;
  }
}
