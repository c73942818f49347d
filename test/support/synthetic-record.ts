import { randomUUID } from 'node:crypto';
import { prng } from './prng.js';

/**
 * A synthetic patient record shaped like a Synthea export (written for these tests, no Synthea
 * data): one transaction Bundle with `urn:uuid:` fullUrls, the organization and practitioner
 * as conditional creates (`ifNoneExist` on an identifier, as Synthea does), then the patient
 * and `encounters` encounters, each with observations, a condition, a procedure, a medication
 * request, an immunization and a diagnostic report that reference the patient and the encounter.
 * Entries: 4 + encounters × (perEncounter observations + 6).
 */
export function syntheticRecord(encounters: number, options: { seed?: number; observationsPerEncounter?: number; tag?: string } = {}): {
  bundle: Record<string, unknown>;
  entries: number;
} {
  const random = prng(options.seed ?? 1);
  const perEncounter = options.observationsPerEncounter ?? 8;
  const tag = options.tag ?? randomUUID();
  const entry: Array<Record<string, unknown>> = [];
  const add = (resource: Record<string, unknown>, request?: Record<string, unknown>): string => {
    const fullUrl = `urn:uuid:${randomUUID()}`;
    entry.push({ fullUrl, resource, request: request ?? { method: 'POST', url: resource.resourceType } });
    return fullUrl;
  };
  const identifier = { system: 'https://example.org/synthetic', value: tag };
  const org = add(
    { resourceType: 'Organization', identifier: [identifier], name: 'Synthetic General Hospital', active: true },
    { method: 'POST', url: 'Organization', ifNoneExist: `identifier=${identifier.system}|${tag}` },
  );
  const practitioner = add(
    { resourceType: 'Practitioner', identifier: [identifier], name: [{ family: 'Synthetic', given: ['Pat'], prefix: ['Dr.'] }] },
    { method: 'POST', url: 'Practitioner', ifNoneExist: `identifier=${identifier.system}|${tag}` },
  );
  const location = add({ resourceType: 'Location', name: 'Synthetic Clinic', status: 'active', managingOrganization: { reference: org } });
  const patient = add({
    resourceType: 'Patient',
    identifier: [{ system: 'https://example.org/mrn', value: `mrn-${tag}` }],
    name: [{ use: 'official', family: 'Record', given: ['Synthetic'] }],
    gender: 'female',
    birthDate: '1960-04-02',
    address: [{ line: ['1 Main Street'], city: 'Springfield', state: 'MA', postalCode: '01101', country: 'US' }],
    generalPractitioner: [{ reference: practitioner }],
    managingOrganization: { reference: org },
  });
  const codes = [
    ['8302-2', 'Body Height', 'cm', 150, 190],
    ['29463-7', 'Body Weight', 'kg', 50, 110],
    ['8867-4', 'Heart rate', '/min', 55, 100],
    ['9279-1', 'Respiratory rate', '/min', 12, 20],
    ['2339-0', 'Glucose', 'mg/dL', 70, 140],
    ['2093-3', 'Cholesterol', 'mg/dL', 140, 260],
    ['39156-5', 'Body mass index', 'kg/m2', 18, 35],
    ['8310-5', 'Body temperature', 'Cel', 36, 38],
  ] as const;
  for (let e = 0; e < encounters; e++) {
    const start = new Date(Date.UTC(1980, 0, 1) + e * 7 * 86_400_000);
    const end = new Date(start.getTime() + 3_600_000);
    const period = { start: start.toISOString(), end: end.toISOString() };
    const subject = { reference: patient };
    const encounter = add({
      resourceType: 'Encounter',
      status: 'finished',
      class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
      type: [{ coding: [{ system: 'http://snomed.info/sct', code: '185349003', display: 'Encounter for check up' }], text: 'Encounter for check up' }],
      subject,
      participant: [{ individual: { reference: practitioner } }],
      period,
      location: [{ location: { reference: location } }],
      serviceProvider: { reference: org },
    });
    const context = { reference: encounter };
    const results: Array<{ reference: string }> = [];
    for (let o = 0; o < perEncounter; o++) {
      const [code, display, unit, low, high] = codes[o % codes.length];
      const value = Math.round((low + random() * (high - low)) * 10) / 10;
      results.push({
        reference: add({
          resourceType: 'Observation',
          status: 'final',
          category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
          code: { coding: [{ system: 'http://loinc.org', code, display }], text: display },
          subject,
          encounter: context,
          effectiveDateTime: period.start,
          issued: period.start,
          valueQuantity: { value, unit, system: 'http://unitsofmeasure.org', code: unit },
        }),
      });
    }
    add({
      resourceType: 'Condition',
      clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'resolved' }] },
      verificationStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code: 'confirmed' }] },
      code: { coding: [{ system: 'http://snomed.info/sct', code: '444814009', display: 'Viral sinusitis (disorder)' }], text: 'Viral sinusitis (disorder)' },
      subject,
      encounter: context,
      onsetDateTime: period.start,
      abatementDateTime: period.end,
      recordedDate: period.start,
    });
    add({
      resourceType: 'Procedure',
      status: 'completed',
      code: { coding: [{ system: 'http://snomed.info/sct', code: '430193006', display: 'Medication Reconciliation (procedure)' }] },
      subject,
      encounter: context,
      performedPeriod: period,
      location: { reference: location },
    });
    add({
      resourceType: 'MedicationRequest',
      status: 'stopped',
      intent: 'order',
      medicationCodeableConcept: { coding: [{ system: 'http://www.nlm.nih.gov/research/umls/rxnorm', code: '313782', display: 'Acetaminophen 325 MG Oral Tablet' }] },
      subject,
      encounter: context,
      authoredOn: period.start,
      requester: { reference: practitioner },
    });
    add({
      resourceType: 'Immunization',
      status: 'completed',
      vaccineCode: { coding: [{ system: 'http://hl7.org/fhir/sid/cvx', code: '140', display: 'Influenza, seasonal, injectable, preservative free' }] },
      patient: subject,
      encounter: context,
      occurrenceDateTime: period.start,
      primarySource: true,
    });
    add({
      resourceType: 'DiagnosticReport',
      status: 'final',
      code: { coding: [{ system: 'http://loinc.org', code: '51990-0', display: 'Basic metabolic panel - Blood' }] },
      subject,
      encounter: context,
      effectiveDateTime: period.start,
      issued: period.start,
      result: results,
    });
  }
  return { bundle: { resourceType: 'Bundle', type: 'transaction', entry }, entries: entry.length };
}
