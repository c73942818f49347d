import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_DEPTH, MAX_ISSUES, validateResource } from './validate-resource.js';

type Json = Record<string, unknown>;

/** The issues as sorted `code expression` strings, so each case states exactly what it expects. */
function found(resource: unknown): string[] {
  return validateResource(resource)
    .map((i) => `${i.code} ${i.expression?.join(',')}`)
    .sort();
}

function expectIssues(resource: unknown, expected: string[]): void {
  assert.deepEqual(found(resource), [...expected].sort(), JSON.stringify(validateResource(resource), null, 1));
}

function text(resource: unknown): string {
  return validateResource(resource)[0]?.details?.text ?? '';
}

const patient = (): Json => ({
  resourceType: 'Patient',
  id: 'example-1',
  meta: { versionId: '3', lastUpdated: '2024-05-01T10:20:30.123Z', profile: ['http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient'] },
  text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">John Doe</div>' },
  extension: [
    { url: 'http://hl7.org/fhir/us/core/StructureDefinition/us-core-race', extension: [{ url: 'text', valueString: 'Mixed' }] },
    { url: 'http://example.org/fhir/score', valueDecimal: 1.5 },
  ],
  identifier: [{ system: 'urn:oid:2.16.840.1.113883.4.1', value: '123-45-6789' }],
  active: true,
  name: [
    { use: 'official', family: 'Doe', given: ['John', 'Quincy'], _given: [null, { extension: [{ url: 'http://example.org/initial', valueBoolean: true }] }] },
    { use: 'nickname', given: ['Johnny'] },
  ],
  telecom: [{ system: 'phone', value: '+1 555 0100', use: 'home', rank: 1 }, { system: 'email', value: 'john@example.org' }],
  gender: 'male',
  birthDate: '1974-12-25',
  _birthDate: { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/patient-birthTime', valueDateTime: '1974-12-25T14:35:45-05:00' }] },
  multipleBirthInteger: 2,
  contained: [{ resourceType: 'Organization', id: 'org1', name: 'Acme Clinic' }],
  managingOrganization: { reference: '#org1' },
});

const observation = (): Json => ({
  resourceType: 'Observation',
  status: 'final',
  category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
  code: { coding: [{ system: 'http://loinc.org', code: '29463-7', display: 'Body weight' }] },
  subject: { reference: 'Patient/example-1' },
  effectiveDateTime: '2024-05-01T09:00:00+02:00',
  valueQuantity: { value: 72.5, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' },
});

describe('validateResource: valid resources', () => {
  it('accepts a realistic Patient with extensions, _birthDate, aligned _given and contained', () => {
    expectIssues(patient(), []);
  });

  it('accepts an Observation with valueQuantity and one with components', () => {
    expectIssues(observation(), []);
    const bp = { ...observation(), valueQuantity: undefined, component: [{ code: { text: 'systolic' }, valueQuantity: { value: 120 } }] };
    expectIssues(JSON.parse(JSON.stringify(bp)), []);
  });

  it('accepts a Bundle with entries and validates each entry resource against its own type', () => {
    const bundle = { resourceType: 'Bundle', type: 'transaction', entry: [
      { fullUrl: 'urn:uuid:61ebe359-bfdc-4613-8bf2-c5e300945f0a', resource: patient(), request: { method: 'POST', url: 'Patient' } },
      { resource: observation(), request: { method: 'POST', url: 'Observation' } },
    ] };
    expectIssues(bundle, []);
    bundle.entry[1].resource.status = undefined;
    (bundle.entry[0].resource).foo = 1;
    expectIssues(JSON.parse(JSON.stringify(bundle)), ['structure Bundle.entry[0].resource.foo', 'required Bundle.entry[1].resource.status']);
  });

  it('accepts a Questionnaire with nested items (contentReference #Questionnaire.item)', () => {
    const q = { resourceType: 'Questionnaire', status: 'active', item: [{ linkId: '1', text: 'About you', type: 'group', item: [
      { linkId: '1.1', type: 'string', text: 'Name', required: true },
      { linkId: '1.2', type: 'group', item: [{ linkId: '1.2.1', type: 'boolean', enableWhen: [{ question: '1.1', operator: 'exists', answerBoolean: true }] }] },
    ] }] };
    expectIssues(q, []);
    (q.item[0].item[1].item as Json[])[0].bad = 1;
    expectIssues(q, ['structure Questionnaire.item[0].item[1].item[0].bad']);
  });

  it('accepts the admin types', () => {
    expectIssues({ resourceType: 'Project', name: 'Demo', defaultProfile: [{ resourceType: 'Patient', profile: ['http://x/p'] }] }, []);
    expectIssues({ resourceType: 'User', firstName: 'Ada', lastName: 'Lovelace', email: 'ada@example.org', emailVerified: true }, []);
    expectIssues({ resourceType: 'User', email: 'ada@example.org' }, ['required User.firstName', 'required User.lastName']);
    expectIssues({ resourceType: 'ProjectMembership', project: { reference: 'Project/1' }, user: { reference: 'User/1' }, profile: { reference: 'Practitioner/1' } }, []);
    // Medplum 4.x's IdentityProvider requires these four (its 5.x makes them optional).
    const idp = { authorizeUrl: 'https://idp/a', tokenUrl: 'https://idp/t', userInfoUrl: 'https://idp/u', clientSecret: 'x' };
    expectIssues({ resourceType: 'ClientApplication', name: 'app', secret: 's3cr3t', identityProvider: { ...idp, clientId: 'c' } }, []);
    expectIssues({ resourceType: 'ClientApplication', identityProvider: { ...idp, clientId: 5, foo: 1 } },
      ['structure ClientApplication.identityProvider.clientId', 'structure ClientApplication.identityProvider.foo']);
  });
});

describe('validateResource: resourceType', () => {
  it('requires a known, concrete resourceType', () => {
    expectIssues({ id: 'x' }, ['required resourceType']);
    expectIssues({ resourceType: 'Foo' }, ['value resourceType']);
    assert.equal(text({ resourceType: 'Foo' }), 'Unknown resource type: Foo');
    expectIssues({ resourceType: 'DomainResource' }, ['value resourceType']);
    expectIssues({ resourceType: 42 }, ['structure resourceType']);
  });

  it('validates contained and Parameters resources against their own type', () => {
    expectIssues({ ...patient(), contained: [{ resourceType: 'Bogus' }] }, ['value Patient.contained[0].resourceType']);
    expectIssues({ ...patient(), contained: [{ id: 'x' }] }, ['required Patient.contained[0].resourceType']);
    expectIssues({ resourceType: 'Parameters', parameter: [{ name: 'p', resource: { resourceType: 'Patient', birthDate: '1990-13-01' } }, { name: 'v', valueString: 'x', part: [{ name: 'q', valueBoolean: 'no' }] }] },
      ['value Parameters.parameter[0].resource.birthDate', 'structure Parameters.parameter[1].part[0].valueBoolean']);
  });
});

describe('validateResource: unknown elements', () => {
  it('reports properties the definition does not have', () => {
    expectIssues({ ...patient(), foo: 1 }, ['structure Patient.foo']);
    assert.match(text({ resourceType: 'Patient', foo: 1 }), /^Unknown element 'foo'/);
    expectIssues({ resourceType: 'Patient', name: [{ family: 'Doe', resourceType: 'HumanName' }] }, ['structure Patient.name[0].resourceType']);
    expectIssues({ resourceType: 'Patient', contact: [{ name: { family: 'X' }, phone: '1' }] }, ['structure Patient.contact[0].phone']);
  });

  it('allows only the declared choice-type suffixes, and only one of them', () => {
    expectIssues({ ...observation(), valueQuantity: undefined, valueUri: 'http://x' }, ['structure Observation.valueUri']);
    assert.match(text({ ...observation(), valueQuantity: undefined, valueFoo: 1 }), /^Unknown element 'valueFoo': value\[x\] does not allow type Foo/);
    expectIssues({ ...observation(), effectiveDateTime: undefined, effectiveDate: '2020' }, ['structure Observation.effectiveDate']);
    expectIssues({ ...observation(), valueInteger: 3 }, ['structure Observation.valueInteger']);
  });

  it('allows _x siblings only for primitive elements and checks their content', () => {
    expectIssues({ resourceType: 'Patient', _foo: { id: 'a' } }, ['structure Patient._foo']);
    expectIssues({ resourceType: 'Patient', _name: [{ id: 'a' }] }, ['structure Patient._name']);
    expectIssues({ resourceType: 'Patient', _birthDate: { extension: [{ url: 'http://hl7.org/fhir/StructureDefinition/data-absent-reason', valueCode: 'unknown' }] } }, []);
    expectIssues({ resourceType: 'Patient', birthDate: '1990', _birthDate: 'x' }, ['structure Patient.birthDate']);
    expectIssues({ resourceType: 'Patient', birthDate: '1990', _birthDate: { foo: 1 } }, ['structure Patient.birthDate.foo']);
    expectIssues({ resourceType: 'Patient', birthDate: '1990', _birthDate: { extension: [{ valueCode: 'x' }] } }, ['required Patient.birthDate.extension[0].url']);
  });

  it('aligns _x arrays with primitive arrays', () => {
    const name = (n: Json): Json => ({ resourceType: 'Patient', name: [n] });
    expectIssues(name({ given: [null, 'B'], _given: [{ id: 'g1' }, null] }), []);
    expectIssues(name({ given: ['A', 'B'], _given: [null] }), ['structure Patient.name[0].given']);
    expectIssues(name({ given: ['A', null] }), ['structure Patient.name[0].given[1]']);
    expectIssues(name({ given: ['A'], _given: { id: 'x' } }), ['structure Patient.name[0].given']);
    expectIssues(name({ given: ['A', 'B'], _given: [null, { extension: [{ url: 'http://u', valueFoo: 1 }] }] }), ['structure Patient.name[0].given[1].extension[0].valueFoo']);
  });

  it('checks extensions and modifierExtensions: url required, value[x] typed', () => {
    expectIssues({ resourceType: 'Patient', extension: [{ valueString: 'x' }] }, ['required Patient.extension[0].url']);
    expectIssues({ resourceType: 'Patient', modifierExtension: [{ url: 'http://x', valueBoolean: 'yes' }] }, ['structure Patient.modifierExtension[0].valueBoolean']);
    expectIssues({ resourceType: 'Patient', extension: [{ url: 'http://x', extension: [{ url: 'a', valueWhatever: 1 }] }] }, ['structure Patient.extension[0].extension[0].valueWhatever']);
  });
});

describe('validateResource: JSON types and cardinality', () => {
  it('requires arrays exactly for repeating elements', () => {
    expectIssues({ resourceType: 'Patient', gender: ['male'] }, ['structure Patient.gender']);
    expectIssues({ resourceType: 'Patient', name: { family: 'Doe' } }, ['structure Patient.name']);
    expectIssues({ resourceType: 'Patient', name: [{ given: 'John' }] }, ['structure Patient.name[0].given']);
  });

  it('distinguishes objects, strings, numbers and booleans', () => {
    expectIssues({ resourceType: 'Patient', maritalStatus: 'M' }, ['structure Patient.maritalStatus']);
    expectIssues({ resourceType: 'Patient', birthDate: { value: '1990' } }, ['structure Patient.birthDate']);
    expectIssues({ resourceType: 'Patient', active: 'true' }, ['structure Patient.active']);
    expectIssues({ resourceType: 'Patient', multipleBirthInteger: '2' }, ['structure Patient.multipleBirthInteger']);
    expectIssues({ ...observation(), valueQuantity: { value: '72.5' } }, ['structure Observation.valueQuantity.value']);
    expectIssues({ resourceType: 'Patient', name: ['Doe'] }, ['structure Patient.name[0]']);
  });

  it('reports missing required elements (min), including backbone and choice elements', () => {
    expectIssues({ resourceType: 'Observation' }, ['required Observation.code', 'required Observation.status']);
    assert.equal(text({ resourceType: 'Observation', code: { text: 'x' } }), "Missing required element 'status'");
    expectIssues({ resourceType: 'Patient', link: [{ type: 'seealso' }] }, ['required Patient.link[0].other']);
    expectIssues({ resourceType: 'Task', status: 'draft', intent: 'order', input: [{ type: { text: 'x' } }] }, ['required Task.input[0].value']);
    // A primitive present only through its _x extensions satisfies min = 1.
    expectIssues({ resourceType: 'Observation', _status: { extension: [{ url: 'http://x', valueString: 'y' }] }, code: { text: 'x' } }, []);
  });

  it('forbids null, empty objects and empty arrays', () => {
    expectIssues({ resourceType: 'Patient', birthDate: null }, ['structure Patient.birthDate']);
    expectIssues({ resourceType: 'Patient', name: [] }, ['structure Patient.name']);
    expectIssues({ resourceType: 'Patient', name: [{}] }, ['structure Patient.name[0]']);
    expectIssues({ resourceType: 'Patient', name: [null] }, ['structure Patient.name[0]']);
    expectIssues({ resourceType: 'Patient', maritalStatus: {} }, ['structure Patient.maritalStatus']);
    expectIssues({ resourceType: 'Patient', name: [{ given: [] }] }, ['structure Patient.name[0].given']);
  });
});

describe('validateResource: primitive formats', () => {
  const cases: [string, Json, string][] = [
    ['boolean', { resourceType: 'Patient', active: 1 }, 'structure Patient.active'],
    ['integer range', { resourceType: 'Patient', multipleBirthInteger: 2147483648 }, 'value Patient.multipleBirthInteger'],
    ['integer whole', { resourceType: 'Patient', multipleBirthInteger: 1.5 }, 'value Patient.multipleBirthInteger'],
    ['positiveInt', { resourceType: 'Patient', telecom: [{ value: 'x', rank: 0 }] }, 'value Patient.telecom[0].rank'],
    ['unsignedInt', { resourceType: 'Bundle', type: 'searchset', total: -1 }, 'value Bundle.total'],
    ['decimal', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueQuantity: { value: '1.0' } }, 'structure Observation.valueQuantity.value'],
    ['string empty', { resourceType: 'Patient', name: [{ family: '' }] }, 'value Patient.name[0].family'],
    ['code whitespace', { resourceType: 'Patient', gender: ' male' }, 'value Patient.gender'],
    ['code double space', { resourceType: 'Patient', gender: 'ma  le' }, 'value Patient.gender'],
    ['id', { resourceType: 'Patient', id: 'not_an_id' }, 'value Patient.id'],
    ['id length', { resourceType: 'Patient', id: 'a'.repeat(65) }, 'value Patient.id'],
    ['uri', { resourceType: 'Patient', implicitRules: 'http://a b' }, 'value Patient.implicitRules'],
    ['url', { resourceType: 'Patient', photo: [{ url: 'http://a b' }] }, 'value Patient.photo[0].url'],
    ['canonical', { resourceType: 'Patient', meta: { profile: ['http://x y'] } }, 'value Patient.meta.profile[0]'],
    ['oid', { resourceType: 'Patient', extension: [{ url: 'http://u', valueOid: '2.16.840' }] }, 'value Patient.extension[0].valueOid'],
    ['uuid', { resourceType: 'Patient', extension: [{ url: 'http://u', valueUuid: 'urn:uuid:XYZ' }] }, 'value Patient.extension[0].valueUuid'],
    ['base64Binary', { resourceType: 'Patient', photo: [{ data: 'abc' }] }, 'value Patient.photo[0].data'],
    ['instant', { resourceType: 'Patient', meta: { lastUpdated: '2024-05-01' } }, 'value Patient.meta.lastUpdated'],
    ['date month', { resourceType: 'Patient', birthDate: '1990-13-01' }, 'value Patient.birthDate'],
    ['date day', { resourceType: 'Patient', birthDate: '2023-02-29' }, 'value Patient.birthDate'],
    ['date format', { resourceType: 'Patient', birthDate: '01/02/1990' }, 'value Patient.birthDate'],
    ['dateTime no seconds', { resourceType: 'Patient', deceasedDateTime: '2020-01-01T10:00' }, 'value Patient.deceasedDateTime'],
    ['dateTime no zone', { resourceType: 'Patient', deceasedDateTime: '2020-01-01T10:00:00' }, 'value Patient.deceasedDateTime'],
    ['time', { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueTime: '24:00:00' }, 'value Observation.valueTime'],
    ['markdown', { resourceType: 'Questionnaire', status: 'draft', description: '' }, 'value Questionnaire.description'],
    ['xhtml', { resourceType: 'Patient', text: { status: 'generated', div: 7 } }, 'structure Patient.text.div'],
  ];
  for (const [name, resource, expected] of cases) {
    it(`rejects a bad ${name}`, () => expectIssues(resource, [expected]));
  }

  it('accepts every valid form', () => {
    for (const birthDate of ['1990', '1990-05', '2024-02-29', '2000-02-29']) expectIssues({ resourceType: 'Patient', birthDate }, []);
    for (const d of ['2020', '2020-01-01T10:00:00Z', '2020-01-01T10:00:00.123+14:00']) expectIssues({ resourceType: 'Patient', deceasedDateTime: d }, []);
    expectIssues({ resourceType: 'Patient', id: 'A-z.0', multipleBirthInteger: -2147483648, photo: [{ data: 'QUJD\nREVG', size: 0 }] }, []);
    expectIssues({ resourceType: 'Patient', extension: [{ url: 'http://u', valueUuid: 'urn:uuid:61ebe359-bfdc-4613-8bf2-c5e300945f0a' }, { url: 'http://u', valueOid: 'urn:oid:1.2.3' }] }, []);
    expectIssues({ resourceType: 'Patient', name: [{ family: 'D\u00a0O' }] }, []);
  });
});

describe('validateResource: robustness and speed', () => {
  it('never throws on non-objects and returns an issue', () => {
    for (const input of [null, undefined, 'Patient', 42, true, [], [{ resourceType: 'Patient' }]]) {
      assert.equal(validateResource(input).length, 1);
    }
  });

  it('treats prototype-pollution keys as unknown elements', () => {
    const polluted = JSON.parse('{"resourceType":"Patient","__proto__":{"admin":true},"name":[{"constructor":{"prototype":{}}}]}') as Json;
    expectIssues(polluted, ['structure Patient.__proto__', 'structure Patient.name[0].constructor']);
    assert.equal(({} as Json).admin, undefined);
  });

  it('reports excessive nesting once, including cyclic objects', () => {
    let deep: Json = { url: 'http://u', valueString: 'x' };
    for (let i = 0; i < 5000; i++) deep = { url: 'http://u', extension: [deep] };
    const issues = validateResource({ resourceType: 'Patient', extension: [deep] });
    assert.equal(issues.length, 1);
    assert.equal(issues[0].details?.text, `Maximum nesting depth (${MAX_DEPTH}) exceeded`);
    const cyclic: Json = { url: 'http://u' };
    cyclic.extension = [cyclic];
    assert.equal(validateResource({ resourceType: 'Patient', extension: [cyclic] }).length, 1);
  });

  it('caps the number of issues on huge arrays', () => {
    const issues = validateResource({ resourceType: 'Patient', name: Array.from({ length: 100_000 }, () => ({ family: 1 })) });
    assert.equal(issues.length, MAX_ISSUES);
    assert.match(issues[MAX_ISSUES - 1].details?.text ?? '', /^Too many problems/);
  });

  it('survives throwing getters and long values', () => {
    const evil = { resourceType: 'Patient', get name(): unknown { throw new Error('boom'); } };
    assert.equal(validateResource(evil).length, 1);
    const long = { resourceType: 'Patient', extension: [{ url: 'http://u', valueOid: `urn:oid:1${'.1'.repeat(1_000_000)}` }] };
    expectIssues(long, ['value Patient.extension[0].valueOid']);
  });
});
