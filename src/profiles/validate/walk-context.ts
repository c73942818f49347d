import type { OperationOutcomeIssue } from '@medplum/fhirtypes';
import type { FhirPathEvaluator } from '../../fhir/fhirpath-evaluator.js';
import type { CompiledProfile, ElementNode } from '../element-tree.js';
import type { ProfileSource } from '../profile-source.js';

/**
 * `base`: the base definition of a type (its invariants, reference targets and extensions — the
 * rest is the structural check's); `profile`: a constraint on it (only what the profile changes
 * from the base is checked, so no issue is reported twice).
 */
export type Mode = 'base' | 'profile';

/** Where an item sits: its FHIRPath (`Patient.contact[0]`), the compile base (`Patient.contact`, `Quantity`), the element path and the type. */
export interface At {
  expr: string;
  base: string;
  path: string;
  type: string;
  /** FHIRPath's %resource and %rootResource here (undefined: the resource validated): a Bundle entry's resource is its own root, a contained one's root is its container. */
  resource?: Record<string, unknown>;
  rootResource?: Record<string, unknown>;
}

/** The walk itself (walk.ts), handed to the checks that validate nested content (slices by profile, extensions). */
export interface Walker {
  visitItem(ctx: WalkContext, node: ElementNode, value: unknown, at: At, mode: Mode): Promise<void>;
  validateAgainst(ctx: WalkContext, profile: CompiledProfile, value: unknown, at: At, mode: Mode): Promise<void>;
}

/** Bounds of one validation (config.profileLimits; docs/errors.md#bounds-and-timeouts). */
export interface ProfileLimits {
  maxWork: number;
  maxInvariants: number;
  maxExpressionLength: number;
}

/** The system of the HL7 validator's message ids, carried in `details.coding` where one applies. */
export const MESSAGE_ID_SYSTEM = 'http://hl7.org/fhir/java-core-messageId';

/** Most issues one validation reports. */
export const MAX_PROFILE_ISSUES = 100;

/** A coded value under a binding, checked once the walk is over (one question to the terminology engine). */
export interface PendingBinding {
  valueSet: string;
  strength: 'required' | 'extensible';
  expression: string;
  codes: Array<{ system: string | undefined; code: string }>;
  /** A CodeableConcept with text only (an extensible binding is then met). */
  textOnly: boolean;
  /** A CodeableConcept (the HL7 validator's message id is for those). */
  concept: boolean;
}

/** Thrown when a bound is reached; the walk stops and reports it as one issue. */
export class LimitReached extends Error {}

/**
 * The state of one validation: the issues, the work done against the bounds, the bindings to
 * check at the end, and where profiles come from.
 */
export class WalkContext {
  readonly issues: OperationOutcomeIssue[] = [];
  readonly bindings: PendingBinding[] = [];
  work = 0;
  invariants = 0;
  /** Constraint keys already reported as not evaluable. */
  readonly unevaluable = new Set<string>();
  private sinceYield = 0;

  constructor(
    readonly walker: Walker,
    readonly source: ProfileSource,
    readonly limits: ProfileLimits,
    /** The resource validated (for `%resource` and contained references). */
    readonly root: Record<string, unknown>,
    /** Where invariants the R4 definitions do not state are evaluated: off the HTTP thread, with a time limit. */
    readonly fhirpath?: FhirPathEvaluator,
  ) {}

  add(severity: OperationOutcomeIssue['severity'], code: OperationOutcomeIssue['code'], text: string, expression: string, messageId?: string): void {
    if (this.issues.length >= MAX_PROFILE_ISSUES) return;
    const found: OperationOutcomeIssue = { severity, code, details: { text }, expression: [expression] };
    if (messageId) found.details = { coding: [{ system: MESSAGE_ID_SYSTEM, code: messageId }], text };
    this.issues.push(found);
  }

  /** Counts `n` units of work; past the bound the walk stops. Yields to the event loop now and then. */
  async tick(n = 1): Promise<void> {
    this.work += n;
    this.sinceYield += n;
    if (this.work > this.limits.maxWork) throw new LimitReached(`work:${this.limits.maxWork}`);
    if (this.sinceYield >= 2_000) {
      this.sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }

  /** Counts one FHIRPath evaluation against its bound. */
  countInvariant(): void {
    this.invariants++;
    if (this.invariants > this.limits.maxInvariants) throw new LimitReached(`invariants:${this.limits.maxInvariants}`);
  }
}
