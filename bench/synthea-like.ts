import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/**
 * Generated clinical data shaped like a Synthea population (no Synthea content): per patient
 * a Patient, `encounters` Encounters referencing it, per encounter `observations`
 * Observations (LOINC-style vital signs with quantities) and one Condition in every third,
 * each referencing its patient and encounter. Deterministic for a given seed.
 */
export interface SyntheaShape {
  patients: number;
  encounters: number;
  observations: number;
}

const FAMILIES = ['Smith', 'Garcia', 'Nguyen', 'Okafor', 'Kowalski', 'Haddad', 'Larsen', 'Moreau', 'Tanaka', 'Silva'];
const GIVEN = ['Ava', 'Noah', 'Mia', 'Liam', 'Zoe', 'Omar', 'Ines', 'Kai', 'Lena', 'Ravi'];
const VITALS: Array<[code: string, display: string, unit: string, base: number]> = [
  ['8302-2', 'Body height', 'cm', 150],
  ['29463-7', 'Body weight', 'kg', 60],
  ['8867-4', 'Heart rate', '/min', 60],
  ['9279-1', 'Respiratory rate', '/min', 12],
  ['8310-5', 'Body temperature', 'Cel', 36],
];
const CONDITIONS: Array<[code: string, display: string]> = [
  ['44054006', 'Diabetes'],
  ['38341003', 'Hypertension'],
  ['195662009', 'Acute viral pharyngitis'],
  ['10509002', 'Acute bronchitis'],
];

/** The resources of patient `p`, in load order (each after what it references). */
export function* patientResources(p: number, shape: SyntheaShape): Generator<Record<string, unknown>> {
  const pid = `syn-p${p}`;
  yield {
    resourceType: 'Patient',
    id: pid,
    identifier: [{ system: 'https://example.org/mrn', value: `MRN${100000 + p}` }],
    name: [{ use: 'official', family: FAMILIES[p % FAMILIES.length], given: [GIVEN[(p * 7) % GIVEN.length]] }],
    gender: p % 2 === 0 ? 'female' : 'male',
    birthDate: `${1930 + (p % 90)}-${String((p % 12) + 1).padStart(2, '0')}-${String((p % 28) + 1).padStart(2, '0')}`,
    address: [{ line: [`${p} Main St`], city: 'Springfield', state: 'MA', postalCode: '01101', country: 'US' }],
    telecom: [{ system: 'phone', value: `555-${String(p % 10000).padStart(4, '0')}`, use: 'home' }],
  };
  for (let e = 0; e < shape.encounters; e++) {
    const eid = `syn-e${p}-${e}`;
    const start = new Date(Date.UTC(2010 + (e % 14), (p + e) % 12, (e % 27) + 1, 9)).toISOString();
    const end = new Date(Date.parse(start) + 30 * 60_000).toISOString();
    yield {
      resourceType: 'Encounter',
      id: eid,
      status: 'finished',
      class: { system: 'http://terminology.hl7.org/CodeSystem/v3-ActCode', code: 'AMB' },
      type: [{ coding: [{ system: 'http://snomed.info/sct', code: '185349003', display: 'Encounter for check up' }] }],
      subject: { reference: `Patient/${pid}` },
      period: { start, end },
    };
    for (let o = 0; o < shape.observations; o++) {
      const [code, display, unit, base] = VITALS[o % VITALS.length];
      yield {
        resourceType: 'Observation',
        id: `syn-o${p}-${e}-${o}`,
        status: 'final',
        category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
        code: { coding: [{ system: 'http://loinc.org', code, display }], text: display },
        subject: { reference: `Patient/${pid}` },
        encounter: { reference: `Encounter/${eid}` },
        effectiveDateTime: start,
        valueQuantity: { value: base + ((p + e + o) % 20), unit, system: 'http://unitsofmeasure.org', code: unit },
      };
    }
    if (e % 3 === 0) {
      const [code, display] = CONDITIONS[(p + e) % CONDITIONS.length];
      yield {
        resourceType: 'Condition',
        id: `syn-c${p}-${e}`,
        clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-clinical', code: 'active' }] },
        code: { coding: [{ system: 'http://snomed.info/sct', code, display }], text: display },
        subject: { reference: `Patient/${pid}` },
        encounter: { reference: `Encounter/${eid}` },
        onsetDateTime: start,
      };
    }
  }
}

/** Resources per patient with `shape`. */
export function resourcesPerPatient(shape: SyntheaShape): number {
  return 1 + shape.encounters * (1 + shape.observations) + Math.ceil(shape.encounters / 3);
}

/** Writes about `total` resources as NDJSON to `file`; returns the number written. */
export async function writeSyntheaNdjson(file: string, total: number, shape: SyntheaShape = { patients: 0, encounters: 10, observations: 5 }): Promise<number> {
  const out = createWriteStream(file);
  const patients = Math.max(1, Math.round(total / resourcesPerPatient(shape)));
  let n = 0;
  for (let p = 0; p < patients; p++) {
    const lines: string[] = [];
    for (const r of patientResources(p, shape)) lines.push(JSON.stringify(r));
    n += lines.length;
    if (!out.write(lines.join('\n') + '\n')) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return n;
}

/** A UUID made from a generated id (the same id gives the same UUID). */
export function uuidOf(id: string): string {
  const hex = createHash('sha256').update(id).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

export function withUrnReferences(resource: Record<string, unknown>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(resource).replace(/"reference":"[A-Za-z]+\/([^"]+)"/g, (_m, id: string) => `"reference":"urn:uuid:${uuidOf(id)}"`)) as Record<
    string,
    unknown
  >;
}
