import type { ResourceRepository } from '../../core/repository.js';
import type { SearchTerminology } from '../../core/search.js';
import { heard } from '../../storage/change-feed.js';
import { providerFor } from '../providers/select.js';
import { ValueSetEvaluator } from './compose.js';
import { resolveCodeSystem, resolveValueSet, valueSetByResourceId } from './resolve.js';
import type { TermContext, TerminologyEnv } from '../types.js';
import { parseVersionRules } from '../versions.js';

/**
 * The terminology side of the search modifiers `:below`, `:above`, `:in`, `:not-in`
 * (docs/rest.md#terminology-modifiers): subsumption from the code system's in-memory closure
 * (`isAncestor`, a lookup per candidate whatever the depth), value-set membership from the
 * engine's own evaluation (`ValueSetEvaluator.members`, the one `$validate-code` uses), for the
 * few codes search found stored. Resolution follows the caller's repository, so another
 * project's code systems and value sets do not exist for it; every node sees a change before
 * the next search (the same barrier as a terminology request).
 */
export function searchTerminology(env: TerminologyEnv): SearchTerminology {
  const context = async (repo: ResourceRepository): Promise<TermContext> => {
    await heard(env.db.caughtUp());
    return { db: env.db, repo, env, log: env.log, inlineCodeSystems: [], inlineValueSets: [], supplements: [], memo: new Map(), versionRules: parseVersionRules({}) };
  };
  return {
    async related(repo, system, code, relation, candidates) {
      const tc = await context(repo);
      const cs = await resolveCodeSystem(tc, system);
      if (!cs) return undefined;
      const provider = providerFor(tc, cs);
      const found = await provider.findConcepts([...new Set([code, ...candidates])]);
      const out = new Set<string>(candidates.filter((c) => c === code));
      const anchor = found.get(code);
      if (!anchor) return out;
      for (const candidate of candidates) {
        const concept = found.get(candidate);
        if (!concept || out.has(candidate)) continue;
        if (concept.id === anchor.id) out.add(candidate);
        else if (relation === 'below' ? await provider.isAncestor(anchor.id, concept.id) : await provider.isAncestor(concept.id, anchor.id)) out.add(candidate);
      }
      return out;
    },
    async members(repo, valueSet, candidates) {
      const tc = await context(repo);
      // A canonical `url[|version]`, or a relative `ValueSet/<id>` (the stored resource the caller sees).
      const relative = /^ValueSet\/([A-Za-z0-9\-.]{1,64})$/.exec(valueSet);
      const bar = valueSet.indexOf('|');
      const vs = relative
        ? await valueSetByResourceId(tc, relative[1])
        : await resolveValueSet(tc, bar >= 0 ? valueSet.slice(0, bar) : valueSet, bar >= 0 ? valueSet.slice(bar + 1) : undefined);
      if (!vs) return undefined;
      const evaluator = new ValueSetEvaluator(tc, vs);
      const bySystem = new Map<string, string[]>();
      for (const { system, code } of candidates) bySystem.set(system, [...(bySystem.get(system) ?? []), code]);
      const out = new Set<string>();
      for (const [system, codes] of bySystem) {
        for (const code of (await evaluator.members(system, undefined, codes)).keys()) out.add(`${system}|${code}`);
      }
      return out;
    },
  };
}
