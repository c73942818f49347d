import type { ElementDefinition } from '@medplum/fhirtypes';
import { CORE_PREFIX } from './core-definitions.js';
import { idOf } from './element-ids.js';
import type { SnapshotElements } from './context.js';

/** The elements below the root of the definition an element's (one) type names, to expand it with. */
export interface TypeChildren {
  children: ElementDefinition[];
  /** Id and path of that definition's root (`Identifier`), which the children's ids and paths start with. */
  rootId: string;
  rootPath: string;
}

/**
 * The children of `element`'s type: from the profile its type names when it names one (an
 * extension definition, a constrained data type), else from the R4 definition of the type.
 * That definition gets a snapshot first when it has none. An extension definition's `url`
 * child is fixed to its url.
 */
export function typeChildren(list: SnapshotElements, element: ElementDefinition, id: string): TypeChildren {
  const type = element.type?.[0];
  const code = type?.code ?? '';
  const profile = type?.profile?.[0];
  const canonical = profile ?? (/^[a-z]+:/.test(code) ? code : CORE_PREFIX + code);
  const definition = list.generation.withSnapshot(canonical, list.chain, profile ? `type profile of ${id}` : `definition of type ${code} (for ${id})`);
  const [root, ...children] = definition.snapshot?.element ?? [];
  if (!root) throw list.notInBase(id);
  const rootId = idOf(root);
  // An extension definition's children: its `url` is fixed to the definition's url (as its instances must have it).
  if (profile && code === 'Extension') {
    const at = children.findIndex((e) => idOf(e) === `${rootId}.url`);
    if (at >= 0 && !Object.keys(children[at]).some((k) => /^fixed[A-Z]/.test(k))) children[at] = { ...children[at], fixedUri: profile.split('|')[0] };
  }
  return { children, rootId, rootPath: root.path ?? rootId };
}
