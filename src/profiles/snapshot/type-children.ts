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
 * That definition gets a snapshot first when it has none.
 */
export function typeChildren(list: SnapshotElements, element: ElementDefinition, id: string): TypeChildren {
  const type = element.type?.[0];
  const code = type?.code ?? '';
  const profile = type?.profile?.[0];
  const canonical = profile ?? (/^[a-z]+:/.test(code) ? code : CORE_PREFIX + code);
  const definition = list.generation.withSnapshot(canonical, list.chain, profile ? `type profile of ${id}` : `definition of type ${code} (for ${id})`);
  const [root, ...children] = definition.snapshot?.element ?? [];
  if (!root) throw list.notInBase(id);
  return { children, rootId: idOf(root), rootPath: root.path ?? idOf(root) };
}
