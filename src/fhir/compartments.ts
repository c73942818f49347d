import { isResourceType, patientCompartmentParams } from './definitions.js';

/**
 * The five R4 compartments (docs/rest.md#compartment-search). Patient's comes from the R4
 * CompartmentDefinition shipped with the definitions; the other four, which are not shipped,
 * are written below from the R4 specification: for each resource type in the compartment, the
 * search parameters through which a resource references the compartment's resource. A type
 * that is not listed is never in that compartment; the compartment's own type is in it by
 * identity (`{def}` in the specification).
 */
export const COMPARTMENT_TYPES = ['Patient', 'Encounter', 'RelatedPerson', 'Practitioner', 'Device'] as const;
export type CompartmentType = (typeof COMPARTMENT_TYPES)[number];

/** The canonical of each compartment's CompartmentDefinition. */
export const COMPARTMENT_CANONICALS: Record<CompartmentType, string> = {
  Patient: 'http://hl7.org/fhir/CompartmentDefinition/patient',
  Encounter: 'http://hl7.org/fhir/CompartmentDefinition/encounter',
  RelatedPerson: 'http://hl7.org/fhir/CompartmentDefinition/relatedPerson',
  Practitioner: 'http://hl7.org/fhir/CompartmentDefinition/practitioner',
  Device: 'http://hl7.org/fhir/CompartmentDefinition/device',
};

/** `Type: 'param param'` (space-separated) — compact, one line per member type. */
type Table = Record<string, string>;

const ENCOUNTER: Table = {
  CarePlan: 'encounter', CareTeam: 'encounter', ChargeItem: 'context', Claim: 'encounter',
  ClinicalImpression: 'encounter', Communication: 'encounter', CommunicationRequest: 'encounter',
  Composition: 'encounter', Condition: 'encounter', DeviceRequest: 'encounter', DiagnosticReport: 'encounter',
  DocumentManifest: 'related-ref', DocumentReference: 'encounter', ExplanationOfBenefit: 'encounter',
  Media: 'encounter', MedicationAdministration: 'context', MedicationRequest: 'encounter',
  NutritionOrder: 'encounter', Observation: 'encounter', Procedure: 'encounter',
  QuestionnaireResponse: 'encounter', RequestGroup: 'encounter', ServiceRequest: 'encounter',
  VisionPrescription: 'encounter',
};

const RELATED_PERSON: Table = {
  AdverseEvent: 'recorder', AllergyIntolerance: 'asserter', Appointment: 'actor', AppointmentResponse: 'actor',
  Basic: 'author', CarePlan: 'performer', CareTeam: 'participant', ChargeItem: 'enterer performer-actor',
  Claim: 'payee', Communication: 'sender recipient', CommunicationRequest: 'sender recipient requester',
  Composition: 'author', Condition: 'asserter', Coverage: 'policy-holder subscriber payor',
  DocumentManifest: 'author recipient', DocumentReference: 'author', Encounter: 'participant',
  ExplanationOfBenefit: 'payee', Invoice: 'recipient', MedicationAdministration: 'performer',
  MedicationStatement: 'source', Observation: 'performer', Patient: 'link', Person: 'link',
  Procedure: 'performer', Provenance: 'agent', QuestionnaireResponse: 'author source',
  RequestGroup: 'participant', Schedule: 'actor', ServiceRequest: 'performer', SupplyRequest: 'requester',
};

const PRACTITIONER: Table = {
  Account: 'subject', AdverseEvent: 'recorder', AllergyIntolerance: 'recorder asserter', Appointment: 'actor',
  AppointmentResponse: 'actor', AuditEvent: 'agent', Basic: 'author', CarePlan: 'performer',
  CareTeam: 'participant', ChargeItem: 'enterer performer-actor', Claim: 'enterer provider payee care-team',
  ClaimResponse: 'requestor', ClinicalImpression: 'assessor', Communication: 'sender recipient',
  CommunicationRequest: 'sender recipient requester', Composition: 'subject author attester',
  Condition: 'asserter', CoverageEligibilityRequest: 'enterer provider', CoverageEligibilityResponse: 'requestor',
  DetectedIssue: 'author', DeviceRequest: 'requester performer', DiagnosticReport: 'performer',
  DocumentManifest: 'subject author recipient', DocumentReference: 'subject author authenticator',
  Encounter: 'practitioner participant', EpisodeOfCare: 'care-manager',
  ExplanationOfBenefit: 'enterer provider payee care-team', Flag: 'author', Group: 'member',
  Immunization: 'performer', Invoice: 'participant', Linkage: 'author', List: 'source',
  Media: 'subject operator', MedicationAdministration: 'performer', MedicationDispense: 'performer receiver',
  MedicationRequest: 'requester', MedicationStatement: 'source', MessageHeader: 'receiver author responsible enterer',
  NutritionOrder: 'provider', Observation: 'performer', Patient: 'general-practitioner', PaymentNotice: 'provider',
  PaymentReconciliation: 'requestor', Person: 'practitioner', PractitionerRole: 'practitioner',
  Procedure: 'performer', Provenance: 'agent', QuestionnaireResponse: 'author source',
  RequestGroup: 'participant author', ResearchStudy: 'principalinvestigator', RiskAssessment: 'performer',
  Schedule: 'actor', ServiceRequest: 'performer requester', Specimen: 'collector',
  SupplyDelivery: 'supplier receiver', SupplyRequest: 'requester', VisionPrescription: 'prescriber',
};

const DEVICE: Table = {
  Account: 'subject', Appointment: 'actor', AppointmentResponse: 'actor', AuditEvent: 'agent',
  ChargeItem: 'enterer performer-actor', Claim: 'procedure-udi item-udi detail-udi subdetail-udi',
  Communication: 'sender recipient', CommunicationRequest: 'sender recipient', Composition: 'author',
  DetectedIssue: 'author', DeviceRequest: 'device subject requester performer', DeviceUseStatement: 'device',
  DiagnosticReport: 'subject', DocumentManifest: 'subject author', DocumentReference: 'subject author',
  ExplanationOfBenefit: 'procedure-udi item-udi detail-udi subdetail-udi', Flag: 'author', Group: 'member',
  Invoice: 'participant', List: 'subject source', Media: 'subject', MedicationAdministration: 'device',
  MessageHeader: 'target', Observation: 'subject device', Provenance: 'agent', QuestionnaireResponse: 'author',
  RequestGroup: 'author', RiskAssessment: 'performer', Schedule: 'actor', ServiceRequest: 'performer requester',
  Specimen: 'subject', SupplyRequest: 'requester',
};

const TABLES: Record<Exclude<CompartmentType, 'Patient'>, Table> = {
  Encounter: ENCOUNTER,
  RelatedPerson: RELATED_PERSON,
  Practitioner: PRACTITIONER,
  Device: DEVICE,
};

const cache = new Map<CompartmentType, Map<string, string[]>>();

/** True for the five compartment types. */
export function isCompartmentType(type: string): type is CompartmentType {
  return (COMPARTMENT_TYPES as readonly string[]).includes(type);
}

/** For each member type of `compartment` (its own type excluded), the parameters that put a resource in it. */
export function compartmentParams(compartment: CompartmentType): Map<string, string[]> {
  if (compartment === 'Patient') return patientCompartmentParams();
  let map = cache.get(compartment);
  if (!map) {
    map = new Map();
    for (const [type, params] of Object.entries(TABLES[compartment])) if (isResourceType(type)) map.set(type, params.split(' '));
    cache.set(compartment, map);
  }
  return map;
}

/** The resource types a compartment holds: its own type, then every member type. */
export function compartmentMemberTypes(compartment: CompartmentType): string[] {
  const types = [...compartmentParams(compartment).keys()];
  return types.includes(compartment) ? types : [compartment, ...types];
}

/** True when resources of `type` can be in a `compartment` (its own type included). */
export function inCompartment(compartment: CompartmentType, type: string): boolean {
  return type === compartment || compartmentParams(compartment).has(type);
}
