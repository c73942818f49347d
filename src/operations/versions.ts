import type { Operation } from '../core/operation.js';
import { loadDefinition } from './definitions/index.js';

/** The FHIR version this server speaks, as `$versions` names it (major.minor). */
const FHIR_VERSION = '4.0';

/** `[base]/$versions` (docs/operations.md#versions): the FHIR versions answered here, and the default. */
export function versionsOperation(): Operation {
  return {
    definition: loadDefinition('CapabilityStatement-versions'),
    handler: () => Promise.resolve({ version: [FHIR_VERSION], default: FHIR_VERSION }),
  };
}
