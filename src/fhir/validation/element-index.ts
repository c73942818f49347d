import type { ElementDefinition, ElementDefinitionType, StructureDefinition } from '@medplum/fhirtypes';
import { primitiveCheck, type PrimitiveCheck } from './primitives.js';
import { structureDefinition } from './structure-definitions.js';

/**
 * A compiled view of the StructureDefinitions: for each complex type, resource and backbone
 * element, the JSON property names it allows. Built lazily per type and cached for the life of
 * the process, so validating a resource is a walk over its JSON with one Map lookup per property.
 */

/** One allowed JSON property of an object (for choice elements, one per allowed type). */
export interface ChildElement {
  /** JSON property name, e.g. `birthDate` or `valueQuantity`. */
  readonly key: string;
  /** Element name in the definition: `birthDate`, or `value[x]` for a choice. */
  readonly name: string;
  readonly min: number;
  /** Max cardinality; Infinity for `*`. */
  readonly max: number;
  /** True when the JSON form is an array (max > 1). */
  readonly array: boolean;
  /** Type code of this property, e.g. `HumanName`, `date`, `Resource`. */
  readonly type: string;
  /** Set for primitive types. */
  readonly primitive?: PrimitiveCheck;
  /** True when the value is a resource (`contained`, `Bundle.entry.resource`, …). */
  readonly resource: boolean;
  /** The ValueSet canonical of a `required` binding, for `code`, `Coding` and `CodeableConcept` elements. */
  readonly binding?: string;
  /** Resolves the nested object's node (complex types, backbone elements, content references). */
  node(): ObjectNode | undefined;
}

/** Required element (min ≥ 1): present when any of `keys` (or its `_key` sibling) is. */
export interface RequiredElement {
  readonly name: string;
  readonly keys: readonly string[];
}

/** The allowed properties of one kind of JSON object. */
export interface ObjectNode {
  /** Element path in its StructureDefinition, e.g. `Patient` or `Questionnaire.item`. */
  readonly path: string;
  readonly children: Map<string, ChildElement>;
  readonly required: readonly RequiredElement[];
  /** Choice element bases (`value`, `effective`, …), for helpful unknown-element messages. */
  readonly choices: ReadonlyMap<string, readonly string[]>;
}

interface MutableNode extends ObjectNode {
  readonly children: Map<string, ChildElement>;
  readonly required: RequiredElement[];
  readonly choices: Map<string, string[]>;
}

/** Types whose `required` bindings validation checks (docs/rest.md#validation). */
const BOUND_TYPES = new Set(['code', 'Coding', 'CodeableConcept']);

const SYSTEM_PREFIX = 'http://hl7.org/fhirpath/System.';
const FHIR_TYPE_EXT = 'http://hl7.org/fhir/StructureDefinition/structuredefinition-fhir-type';
const SYSTEM_TYPES: Record<string, string> = {
  String: 'string', Boolean: 'boolean', Integer: 'integer', Decimal: 'decimal',
  Date: 'date', DateTime: 'dateTime', Time: 'time',
};

const typeNodes = new Map<string, ObjectNode | null>();

/** The node of a complex type or resource type by name, or undefined when unknown or primitive. */
export function typeNode(type: string): ObjectNode | undefined {
  let node = typeNodes.get(type);
  if (node === undefined) {
    const sd = structureDefinition(type);
    node = sd && sd.kind !== 'primitive-type' && sd.snapshot?.element?.length ? compileDefinition(sd) : null;
    typeNodes.set(type, node);
  }
  return node ?? undefined;
}

function compileDefinition(sd: StructureDefinition): ObjectNode {
  const elements = sd.snapshot?.element ?? [];
  const rootPath = elements[0]?.path ?? (sd.type);
  const nodes = new Map<string, MutableNode>();
  const newNode = (path: string): MutableNode => {
    const node: MutableNode = { path, children: new Map(), required: [], choices: new Map() };
    nodes.set(path, node);
    return node;
  };
  const root = newNode(rootPath);
  for (let i = 1; i < elements.length; i++) {
    const el = elements[i];
    const path = el.path ?? '';
    const dot = path.lastIndexOf('.');
    const parent = nodes.get(path.slice(0, dot));
    if (!parent || el.max === '0') continue;
    // An element followed by its own children is an inline (backbone) structure.
    const inline = elements[i + 1]?.path?.startsWith(`${path}.`) ? newNode(path) : undefined;
    addElement(parent, el, path.slice(dot + 1), sd, nodes, inline, parent === root);
  }
  return root;
}

function addElement(
  parent: MutableNode,
  el: ElementDefinition,
  name: string,
  sd: StructureDefinition,
  nodes: Map<string, MutableNode>,
  inline: MutableNode | undefined,
  atRoot: boolean,
): void {
  const min = el.min ?? 0;
  const max = el.max === '*' || el.max === undefined ? Infinity : Number(el.max);
  const array = max > 1;
  const keys: string[] = [];
  const binding = el.binding?.strength === 'required' ? el.binding.valueSet : undefined;
  if (el.contentReference) {
    // e.g. Questionnaire.item.item → #Questionnaire.item: same shape as the referenced element.
    const target = el.contentReference.slice(el.contentReference.indexOf('#') + 1);
    const child = { key: name, name, min, max, array, type: 'BackboneElement', resource: false, node: () => nodes.get(target) };
    parent.children.set(name, child);
    keys.push(name);
  } else if (name.endsWith('[x]')) {
    const base = name.slice(0, -3);
    for (const t of el.type ?? []) {
      const type = typeCode(t);
      const key = base + type.charAt(0).toUpperCase() + type.slice(1);
      parent.children.set(key, makeChild(key, name, min, max, array, type, undefined, binding));
      keys.push(key);
    }
    parent.choices.set(base, keys);
  } else {
    // Resource.id is typed System.String in the R4 snapshots; its value space is `id`.
    const type = atRoot && name === 'id' && sd.kind === 'resource' ? 'id' : typeCode(el.type?.[0]);
    parent.children.set(name, makeChild(name, name, min, max, array, type, inline, binding));
    keys.push(name);
  }
  if (min > 0) parent.required.push({ name, keys });
}

function makeChild(
  key: string,
  name: string,
  min: number,
  max: number,
  array: boolean,
  type: string,
  inline: ObjectNode | undefined,
  binding: string | undefined,
): ChildElement {
  const resource = type === 'Resource' || structureDefinition(type)?.kind === 'resource';
  const primitive = inline || resource ? undefined : primitiveCheck(type);
  const node = inline ? () => inline : () => typeNode(type);
  const child: ChildElement = { key, name, min, max, array, type, primitive, resource, node };
  return binding && BOUND_TYPES.has(type) ? { ...child, binding } : child;
}

/** The FHIR type code of an element type, mapping FHIRPath System types back to FHIR primitives. */
function typeCode(t: ElementDefinitionType | undefined): string {
  const code = t?.code ?? 'Element';
  if (!code.startsWith(SYSTEM_PREFIX)) return code;
  const fhirType = t?.extension?.find((x) => x.url === FHIR_TYPE_EXT)?.valueUrl;
  return fhirType ?? SYSTEM_TYPES[code.slice(SYSTEM_PREFIX.length)] ?? 'string';
}
