import type { ElementDefinition, StructureDefinition } from '@medplum/fhirtypes';

/** What one generation gives the snapshot being built (generate.ts): definitions, and the element budget. */
export interface Definitions {
  /** `canonical`'s definition with a snapshot (its own, else generated); `chain` is the derivation so far; `what` names it in errors. */
  withSnapshot(canonical: string, chain: string[], what: string): StructureDefinition;
  /** Counts `n` new elements against the bound. */
  count(n: number, profileUrl: string): void;
}

/** The snapshot being built (element-list.ts), as the steps that extend it see it. */
export interface SnapshotElements {
  readonly elements: ElementDefinition[];
  readonly generation: Definitions;
  readonly chain: string[];
  indexOf(id: string): number;
  /** The error for an element the base does not have. */
  notInBase(id: string, why?: string): Error;
}
