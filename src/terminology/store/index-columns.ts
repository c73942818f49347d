import type { DesignationRow, PropertyRow } from '../providers/fhir/code-system-rows.js';
import type { BulkColumn } from './bulk-insert.js';

/** Columns of `tx_concept_property` (besides `cs_key`), shared by indexing and `$import`. */
export const PROPERTY_COLUMNS: BulkColumn<PropertyRow>[] = [
  { name: 'concept', type: 'int', value: (r) => r.concept },
  { name: 'code', type: 'text', value: (r) => r.code },
  { name: 'type', type: 'text', value: (r) => r.type },
  { name: 'value', type: 'text', value: (r) => r.value },
  { name: 'system', type: 'text', value: (r) => r.system },
  { name: 'display', type: 'text', value: (r) => r.display },
];

/** Columns of `tx_designation` (besides `cs_key`), shared by indexing and `$import`. */
export const DESIGNATION_COLUMNS: BulkColumn<DesignationRow>[] = [
  { name: 'concept', type: 'int', value: (r) => r.concept },
  { name: 'language', type: 'text', value: (r) => r.language },
  { name: 'use_system', type: 'text', value: (r) => r.useSystem },
  { name: 'use_code', type: 'text', value: (r) => r.useCode },
  { name: 'use_display', type: 'text', value: (r) => r.useDisplay },
  { name: 'value', type: 'text', value: (r) => r.value },
  { name: 'extension', type: 'text', value: (r) => r.extension },
];
