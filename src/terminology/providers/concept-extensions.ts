import type { CodeSystemProperty } from '@medplum/fhirtypes';
import type { StoredProperty } from '../types.js';

/**
 * The standard concept and designation extensions a code system's concepts carry, and the
 * properties they become (docs/terminology.md#concept-extensions): shared by the providers that
 * store them and the rules that show them ($lookup, $expand).
 */

export const CONCEPT_PROPERTIES = 'http://hl7.org/fhir/concept-properties';

const SD = 'http://hl7.org/fhir/StructureDefinition';
/** The standards-status extension: on a concept, its status (`deprecated`, `withdrawn`, …). */
export const STANDARDS_STATUS = `${SD}/structuredefinition-standards-status`;

/**
 * Standard concept extensions kept as concept properties (docs/terminology.md#concept-extensions):
 * order, label and weight under the concept-properties codes, the rendering extensions under
 * their own url (an expansion repeats them as extensions).
 */
export const EXTENSION_PROPERTIES: Record<string, { code: string; type: string }> = {
  [`${SD}/codesystem-conceptOrder`]: { code: 'order', type: 'decimal' },
  [`${SD}/valueset-conceptOrder`]: { code: 'order', type: 'decimal' },
  [`${SD}/codesystem-label`]: { code: 'label', type: 'string' },
  [`${SD}/valueset-label`]: { code: 'label', type: 'string' },
  [`${SD}/itemWeight`]: { code: 'weight', type: 'decimal' },
  // R4's name of itemWeight (renamed in R5), on a code system's or a value set's concept
  [`${SD}/ordinalValue`]: { code: 'weight', type: 'decimal' },
  [`${SD}/rendering-style`]: { code: `${SD}/rendering-style`, type: 'string' },
  [`${SD}/rendering-xhtml`]: { code: `${SD}/rendering-xhtml`, type: 'string' },
};

/** The concept-properties URI of a property an extension became (`weight` is `itemWeight`). */
export const EXTENSION_PROPERTY_URIS: Record<string, string> = {
  order: `${CONCEPT_PROPERTIES}#order`,
  label: `${CONCEPT_PROPERTIES}#label`,
  weight: `${CONCEPT_PROPERTIES}#itemWeight`,
};

/** True for a property row made from an extension (not one the code system declares). */
export function isExtensionProperty(code: string, defs: CodeSystemProperty[]): boolean {
  return (code in EXTENSION_PROPERTY_URIS || code.startsWith(`${SD}/rendering-`)) && !defs.some((d) => d.code === code);
}

/** Property rows for a concept's standard extensions (see EXTENSION_PROPERTIES). */
export function extensionRows(concept: number, extensions: Array<{ url?: string; [k: string]: unknown }> | undefined): Array<{ concept: number } & StoredProperty> {
  const out: Array<{ concept: number } & StoredProperty> = [];
  for (const e of extensions ?? []) {
    const target = e.url ? EXTENSION_PROPERTIES[e.url] : undefined;
    if (!target) continue;
    const value = e.valueInteger ?? e.valueDecimal ?? e.valueString ?? e.valueCode ?? e.valueMarkdown;
    if (typeof value !== 'string' && typeof value !== 'number') continue;
    out.push({ concept, code: target.code, type: target.type, value: String(value), system: undefined, display: undefined });
  }
  return out;
}

/**
 * Designation extensions kept (others are ignored): the SNOMED description id, the standards
 * status, and the rendering extensions (echoed wherever the code system defines them).
 */
export const DESIGNATION_EXTENSIONS = new Set([
  'http://hl7.org/fhir/StructureDefinition/coding-sctdescid',
  'http://hl7.org/fhir/StructureDefinition/structuredefinition-standards-status',
  `${SD}/rendering-style`,
  `${SD}/rendering-xhtml`,
]);

/** The standard extensions of a designation as stored (a JSON array), undefined when it has none. */
export function designationExtensions(extension: Array<{ url?: string }> | undefined): string | undefined {
  const kept = (extension ?? []).filter((e) => e.url && DESIGNATION_EXTENSIONS.has(e.url));
  return kept.length > 0 ? JSON.stringify(kept) : undefined;
}
