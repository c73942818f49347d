export { generateSnapshot, DEFAULT_MAX_PROFILE_ELEMENTS, MAX_DERIVATION_DEPTH, type FetchDefinition, type SnapshotOptions } from './generate.js';
export { coreDefinition } from './core-definitions.js';
