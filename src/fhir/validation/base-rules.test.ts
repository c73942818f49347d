import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateResource } from './validate-resource.js';
import { questionnaireResponseIssues } from './questionnaire-response-rules.js';

type Json = Record<string, unknown>;

const found = (resource: unknown) => validateResource(resource).map((i) => `${i.details?.text} @ ${i.expression?.join(',')}`);
const expect = (resource: unknown, expected: string[]) => assert.deepEqual(found(resource), expected);

const patientEntry = (fullUrl: string, id = '1', extra: Json = {}): Json => ({ fullUrl, resource: { resourceType: 'Patient', id, ...extra } });

describe('extension rules', () => {
  it('needs a value or nested extensions, not both, not neither', () => {
    expect({ resourceType: 'Patient', extension: [{ url: 'http://x.org/a', valueString: 'v' }] }, []);
    expect({ resourceType: 'Patient', extension: [{ url: 'http://x.org/a', extension: [{ url: 'part', valueString: 'v' }] }] }, []);
    expect({ resourceType: 'Patient', extension: [{ url: 'http://x.org/a', valueString: 'v', extension: [{ url: 'part', valueString: 'v' }] }] }, [
      'ext-1: An extension must have either extensions or value[x], not both @ Patient.extension[0]',
    ]);
    expect({ resourceType: 'Patient', birthDate: '2000-01-01', _birthDate: { extension: [{ url: 'http://x.org/a' }] } }, [
      'ext-1: An extension must have either extensions or value[x]: it has neither @ Patient.birthDate.extension[0]',
    ]);
    expect({ resourceType: 'Patient', extension: [{ url: 'http://x.org/a', _valueString: { id: 'v1' } }] }, []);
  });

  it('needs an absolute url, except on the parts of a complex extension', () => {
    expect({ resourceType: 'Patient', modifierExtension: [{ url: 'flag', valueBoolean: true }] }, ["Extension url 'flag' must be an absolute URL @ Patient.modifierExtension[0].url"]);
    expect({ resourceType: 'Patient', extension: [{ url: 'urn:oid:1.2.3', valueBoolean: true }] }, []);
  });
});

describe('Bundle rules', () => {
  it('bdl-1, bdl-2: total and entry.search only in search and history Bundles', () => {
    expect({ resourceType: 'Bundle', type: 'searchset', total: 1, entry: [{ ...patientEntry('http://s/Patient/1'), search: { mode: 'match' } }] }, []);
    expect({ resourceType: 'Bundle', type: 'collection', total: 1, entry: [{ ...patientEntry('http://s/Patient/1'), search: { mode: 'match' } }] }, [
      'bdl-1: total only when a search or history @ Bundle.total',
      'bdl-2: entry.search only when a search @ Bundle.entry[0].search',
    ]);
  });

  it('bdl-3, bdl-4, bdl-5: request and response by Bundle type; an entry has content', () => {
    const request = { method: 'POST', url: 'Patient' };
    expect({ resourceType: 'Bundle', type: 'transaction', entry: [{ ...patientEntry('urn:uuid:9c4c8f41-7b1e-4d62-9f0a-1f7e9b4b8a10'), request }] }, []);
    expect({ resourceType: 'Bundle', type: 'transaction', entry: [patientEntry('urn:uuid:9c4c8f41-7b1e-4d62-9f0a-1f7e9b4b8a10')] }, [
      'bdl-3: entry.request is mandatory in a transaction Bundle @ Bundle.entry[0].request',
    ]);
    expect({ resourceType: 'Bundle', type: 'collection', entry: [{ ...patientEntry('http://s/Patient/1'), request }] }, [
      'bdl-3: entry.request is not allowed in a collection Bundle @ Bundle.entry[0].request',
    ]);
    expect({ resourceType: 'Bundle', type: 'batch-response', entry: [{ response: { status: '201' } }] }, []);
    expect({ resourceType: 'Bundle', type: 'batch-response', entry: [patientEntry('http://s/Patient/1')] }, [
      'bdl-4: entry.response is mandatory in a batch-response Bundle @ Bundle.entry[0].response',
    ]);
    expect({ resourceType: 'Bundle', type: 'collection', entry: [{ fullUrl: 'http://s/Patient/1' }] }, [
      'bdl-5: An entry must contain a resource unless there is a request or response @ Bundle.entry[0]',
    ]);
  });

  it('bdl-7, bdl-8: fullUrls unique (unless versions differ) and not version specific', () => {
    const v = (n: string) => ({ meta: { versionId: n } });
    expect({ resourceType: 'Bundle', type: 'collection', entry: [patientEntry('http://s/Patient/1', '1', v('1')), patientEntry('http://s/Patient/1', '1', v('2'))] }, []);
    expect({ resourceType: 'Bundle', type: 'collection', entry: [patientEntry('http://s/Patient/1'), patientEntry('http://s/Patient/1')] }, [
      "bdl-7: Duplicate fullUrl 'http://s/Patient/1' (also entry[0]): fullUrls must be unique unless the versions differ @ Bundle.entry[1].fullUrl",
    ]);
    expect({ resourceType: 'Bundle', type: 'collection', entry: [patientEntry('http://s/Patient/1/_history/2')] }, [
      "bdl-8: fullUrl cannot be a version specific reference ('http://s/Patient/1/_history/2') @ Bundle.entry[0].fullUrl",
    ]);
  });

  it('fullUrl is absolute and agrees with the resource type and id', () => {
    expect({ resourceType: 'Bundle', type: 'collection', entry: [patientEntry('Patient/1')] }, [
      "fullUrl must be an absolute URL or a URN, not the relative reference 'Patient/1' @ Bundle.entry[0].fullUrl",
    ]);
    expect({ resourceType: 'Bundle', type: 'collection', entry: [patientEntry('http://s/Patient/1', '2')] }, ["fullUrl 'http://s/Patient/1' does not match the resource id '2' @ Bundle.entry[0].fullUrl"]);
    expect({ resourceType: 'Bundle', type: 'collection', entry: [patientEntry('http://s/Observation/1')] }, [
      "fullUrl 'http://s/Observation/1' names type Observation but the resource is a Patient @ Bundle.entry[0].fullUrl",
    ]);
  });

  it('bdl-9 … bdl-12: documents and messages', () => {
    const composition = { resourceType: 'Composition', status: 'final', type: { text: 'note' }, date: '2024-01-01', author: [{ display: 'A' }], title: 'T' };
    expect(
      { resourceType: 'Bundle', type: 'document', identifier: { system: 'urn:ietf:rfc:3986', value: 'urn:uuid:1' }, timestamp: '2024-01-01T00:00:00Z', entry: [{ fullUrl: 'urn:uuid:9c4c8f41-7b1e-4d62-9f0a-1f7e9b4b8a10', resource: composition }] },
      [],
    );
    expect({ resourceType: 'Bundle', type: 'document', entry: [patientEntry('http://s/Patient/1')] }, [
      'bdl-9: A document must have an identifier with a system and a value @ Bundle.identifier',
      'bdl-10: A document must have a date (timestamp) @ Bundle.timestamp',
      'bdl-11: A document must have a Composition as the first resource @ Bundle.entry[0]',
    ]);
    expect({ resourceType: 'Bundle', type: 'message', entry: [patientEntry('http://s/Patient/1')] }, ['bdl-12: A message must have a MessageHeader as the first resource @ Bundle.entry[0]']);
  });

  it('applies to a Bundle inside a Bundle', () => {
    expect({ resourceType: 'Bundle', type: 'collection', entry: [{ fullUrl: 'http://s/Bundle/b', resource: { resourceType: 'Bundle', id: 'b', type: 'collection', total: 2 } }] }, [
      'bdl-1: total only when a search or history @ Bundle.entry[0].resource.total',
    ]);
  });
});

const q = (items: Json[]): Json => ({ resourceType: 'Questionnaire', status: 'active', item: items });

describe('Questionnaire rules', () => {
  it('accepts a well-formed Questionnaire', () => {
    expect(
      q([
        { linkId: 'g', type: 'group', item: [{ linkId: 'smoker', type: 'boolean', required: true }, { linkId: 'packs', type: 'integer', enableWhen: [{ question: 'smoker', operator: '=', answerBoolean: true }] }] },
        { linkId: 'color', type: 'choice', answerOption: [{ valueCoding: { code: 'red' } }] },
        { linkId: 'note', type: 'display', text: 'Thanks' },
      ]),
      [],
    );
  });

  it('reports duplicate linkIds, unknown enableWhen questions, and the que invariants', () => {
    expect(
      q([
        { linkId: 'a', type: 'string' },
        { linkId: 'a', type: 'string' },
        { linkId: 'g', type: 'group' },
        { linkId: 'd', type: 'display', required: true, item: [{ linkId: 'd1', type: 'string' }] },
        { linkId: 'b', type: 'boolean', answerOption: [{ valueString: 'x' }], enableWhen: [{ question: 'zz', operator: 'exists', answerString: 'x' }] },
        { linkId: 'c', type: 'choice', answerOption: [{ valueString: 'x' }], answerValueSet: 'http://vs', initial: [{ valueString: 'x' }, { valueString: 'x' }] },
      ]),
      [
        "que-2: The linkId 'a' is not unique (also at Questionnaire.item[0]) @ Questionnaire.item[1].linkId",
        'que-1: A group item must have nested items @ Questionnaire.item[2]',
        'que-1: A display item cannot have nested items @ Questionnaire.item[3].item',
        'que-6: required and repeats are not permitted for display items @ Questionnaire.item[3]',
        'que-5: A boolean item cannot have answerOption or answerValueSet @ Questionnaire.item[4]',
        "que-7: With operator 'exists' the answer must be a boolean (answerBoolean) @ Questionnaire.item[4].enableWhen[0]",
        "enableWhen.question 'zz' is not the linkId of an item of this Questionnaire @ Questionnaire.item[4].enableWhen[0].question",
        'que-4: An item cannot have both answerOption and answerValueSet @ Questionnaire.item[5]',
        'que-11: An item with answerOption cannot have initial values @ Questionnaire.item[5].initial',
        'que-13: Only a repeating item can have more than one initial value @ Questionnaire.item[5].initial',
      ],
    );
  });
});

describe('QuestionnaireResponse against its Questionnaire', () => {
  const questionnaire = q([
    { linkId: 'name', type: 'string', required: true },
    { linkId: 'smoker', type: 'boolean' },
    { linkId: 'packs', type: 'integer', enableWhen: [{ question: 'smoker', operator: '=', answerBoolean: true }] },
    { linkId: 'color', type: 'choice', repeats: true, answerOption: [{ valueCoding: { system: 'http://c', code: 'red' } }, { valueCoding: { system: 'http://c', code: 'blue' } }] },
    { linkId: 'g', type: 'group', item: [{ linkId: 'g.1', type: 'decimal' }] },
    { linkId: 'info', type: 'display', text: 'Thanks' },
    { linkId: 'mood', type: 'choice', answerValueSet: 'http://vs/mood' },
  ]);
  const check = (items: Json[], status = 'completed') =>
    questionnaireResponseIssues({ resourceType: 'QuestionnaireResponse', status, item: items }, questionnaire, 'QuestionnaireResponse').issues.map(
      (i) => `${i.details?.text} @ ${i.expression?.join(',')}`,
    );
  const a = (value: Json) => [value];

  it('accepts a matching response', () => {
    assert.deepEqual(
      check([
        { linkId: 'name', answer: a({ valueString: 'Ann' }) },
        { linkId: 'smoker', answer: a({ valueBoolean: true }) },
        { linkId: 'packs', answer: a({ valueInteger: 2 }) },
        { linkId: 'color', answer: [{ valueCoding: { system: 'http://c', code: 'red' } }, { valueCoding: { code: 'blue' } }] },
        { linkId: 'g', item: [{ linkId: 'g.1', answer: a({ valueDecimal: 1.5 }) }] },
      ]),
      [],
    );
  });

  it('reports unknown and misplaced linkIds, order, types, repeats, options, display/group answers, enableWhen, required', () => {
    assert.deepEqual(
      check([
        { linkId: 'smoker', answer: a({ valueBoolean: false }) },
        { linkId: 'packs', answer: a({ valueInteger: 2 }) },
        { linkId: 'name', answer: a({ valueInteger: 3 }) },
        { linkId: 'color', answer: a({ valueCoding: { system: 'http://c', code: 'green' } }) },
        { linkId: 'g', answer: a({ valueString: 'x' }), item: [{ linkId: 'g.1', answer: [{ valueDecimal: 1 }, { valueDecimal: 2 }] }, { linkId: 'name', answer: a({ valueString: 'x' }) }] },
        { linkId: 'info', answer: a({ valueString: 'x' }) },
        { linkId: 'nope', answer: a({ valueString: 'x' }) },
      ]),
      [
        "The item 'packs' has answers but is not enabled (enableWhen) @ QuestionnaireResponse.item[1]",
        "The item with linkId 'name' is out of the Questionnaire's order @ QuestionnaireResponse.item[2]",
        'An answer to a string item must be valueString, not valueInteger @ QuestionnaireResponse.item[2].answer[0]',
        "The answer is not one of the answerOptions of item 'color' @ QuestionnaireResponse.item[3].answer[0]",
        'A group item cannot have answers @ QuestionnaireResponse.item[4].answer',
        "The item 'g.1' does not repeat: at most one answer is allowed @ QuestionnaireResponse.item[4].item[0].answer",
        "The item with linkId 'name' is not allowed at this level of the Questionnaire @ QuestionnaireResponse.item[4].item[1].linkId",
        'A display item cannot have answers @ QuestionnaireResponse.item[5].answer',
        "No item with linkId 'nope' in the Questionnaire @ QuestionnaireResponse.item[6].linkId",
      ],
    );
  });

  it('requires required items only in a completed response', () => {
    assert.deepEqual(check([{ linkId: 'smoker', answer: a({ valueBoolean: true }) }]), ["The required item 'name' is missing from a completed response @ QuestionnaireResponse"]);
    assert.deepEqual(check([{ linkId: 'name' }]), ["The required item 'name' has no answer in a completed response @ QuestionnaireResponse.item[0]"]);
    assert.deepEqual(check([{ linkId: 'smoker', answer: a({ valueBoolean: true }) }], 'in-progress'), []);
  });

  it('evaluates enableWhen operators and enableBehavior', () => {
    const gated = (enableWhen: Json[], enableBehavior?: string) =>
      questionnaireResponseIssues(
        { resourceType: 'QuestionnaireResponse', status: 'completed', item: [{ linkId: 'n', answer: a({ valueInteger: 5 }) }, { linkId: 'x', answer: a({ valueString: 'y' }) }] },
        q([{ linkId: 'n', type: 'integer' }, { linkId: 'x', type: 'string', enableWhen, ...(enableBehavior ? { enableBehavior } : {}) }]),
        'QR',
      ).issues.length === 0;
    assert.equal(gated([{ question: 'n', operator: '>', answerInteger: 4 }]), true);
    assert.equal(gated([{ question: 'n', operator: '>', answerInteger: 5 }]), false);
    assert.equal(gated([{ question: 'n', operator: '>=', answerInteger: 5 }]), true);
    assert.equal(gated([{ question: 'n', operator: '<', answerInteger: 5 }]), false);
    assert.equal(gated([{ question: 'n', operator: '!=', answerInteger: 5 }]), false);
    assert.equal(gated([{ question: 'n', operator: 'exists', answerBoolean: true }]), true);
    assert.equal(gated([{ question: 'n', operator: 'exists', answerBoolean: false }]), false);
    const oneOfTwo = [{ question: 'n', operator: '=', answerInteger: 5 }, { question: 'n', operator: '=', answerInteger: 6 }];
    assert.equal(gated(oneOfTwo, 'any'), true);
    assert.equal(gated(oneOfTwo, 'all'), false);
  });

  it('checks a response against a contained Questionnaire, and qrs-1 always', () => {
    const response = (item: Json[]): Json => ({ resourceType: 'QuestionnaireResponse', status: 'completed', questionnaire: '#q', contained: [{ ...questionnaire, id: 'q' }], item });
    expect(response([{ linkId: 'name', answer: a({ valueString: 'Ann' }) }]), []);
    expect(response([{ linkId: 'name', answer: a({ valueBoolean: true }) }]), ['An answer to a string item must be valueString, not valueBoolean @ QuestionnaireResponse.item[0].answer[0]']);
    expect({ resourceType: 'QuestionnaireResponse', status: 'completed', item: [{ linkId: 'a', answer: a({ valueString: 'x' }), item: [{ linkId: 'b' }] }] }, [
      'qrs-1: An item cannot have both answers and nested items @ QuestionnaireResponse.item[0]',
    ]);
  });
});

describe('resources carried by Parameters', () => {
  it('are left to their operation', () => {
    const bundle = { resourceType: 'Bundle', type: 'collection', total: 1 };
    expect({ resourceType: 'Parameters', parameter: [{ name: 'tx-resource', resource: bundle }] }, []);
    expect(bundle, ['bdl-1: total only when a search or history @ Bundle.total']);
  });
});

describe('contained resources and local references', () => {
  const org = (extra: Json = {}): Json => ({ resourceType: 'Organization', id: 'o1', name: 'Acme', ...extra });
  it('accepts contained resources referenced by reference, canonical or from another contained one', () => {
    expect({ resourceType: 'Patient', contained: [org()], managingOrganization: { reference: '#o1' } }, []);
    expect({ resourceType: 'Patient', contained: [org(), { resourceType: 'Organization', id: 'o2', name: 'B', partOf: { reference: '#o1' } }], managingOrganization: { reference: '#o2' } }, []);
    expect({ resourceType: 'Observation', status: 'final', code: { text: 'x' }, contained: [org({ partOf: { reference: '#' } })] }, []);
  });

  it('ref-1, dom-1 … dom-5', () => {
    expect({ resourceType: 'Patient', managingOrganization: { reference: '#nope' } }, ["ref-1: The local reference '#nope' does not match a contained resource @ Patient.managingOrganization.reference"]);
    expect({ resourceType: 'Patient', contained: [org()] }, ["dom-3: The contained resource 'o1' is not referenced from elsewhere in the resource @ Patient.contained[0]"]);
    expect(
      {
        resourceType: 'Patient',
        managingOrganization: { reference: '#o1' },
        contained: [org({ meta: { versionId: '1', security: [{ code: 'R' }] }, text: { status: 'generated', div: '<div xmlns="http://www.w3.org/1999/xhtml">x</div>' }, contained: [{ resourceType: 'Basic', code: { text: 'b' } }] })],
      },
      [
        'dom-2: A contained resource cannot contain other resources @ Patient.contained[0].contained',
        'dom-4: A contained resource cannot have a meta.versionId or a meta.lastUpdated @ Patient.contained[0].meta',
        'dom-5: A contained resource cannot have a security label @ Patient.contained[0].meta.security',
        'dom-1: A contained resource cannot have narrative (text) @ Patient.contained[0].text',
      ],
    );
  });

  it('a Bundle entry has its own contained resources', () => {
    const entry = { fullUrl: 'http://s/Patient/p', resource: { resourceType: 'Patient', id: 'p', contained: [org()], managingOrganization: { reference: '#o1' } } };
    expect({ resourceType: 'Bundle', type: 'collection', entry: [entry] }, []);
  });
});

describe('Coding and Identifier systems', () => {
  it('are absolute URIs', () => {
    expect({ resourceType: 'Patient', identifier: [{ system: 'urn:oid:1.2.3', value: '1' }], maritalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-MaritalStatus', code: 'M' }] } }, []);
    expect({ resourceType: 'Patient', identifier: [{ system: 'mrn', value: '1' }], meta: { tag: [{ system: 'tags', code: 't' }] } }, [
      "Identifier.system must be an absolute URI, not the local reference 'mrn' @ Patient.identifier[0].system",
      "Coding.system must be an absolute URI, not the local reference 'tags' @ Patient.meta.tag[0].system",
    ]);
  });
});

describe('narrative', () => {
  const text = (div: string) => ({ resourceType: 'Patient', text: { status: 'generated', div } });
  it('accepts an XHTML div with content', () => {
    expect(text('<div xmlns="http://www.w3.org/1999/xhtml"><p>John <b>Doe</b></p><a href="#x">x</a></div>'), []);
    expect(text("<div xmlns='http://www.w3.org/1999/xhtml'><img src=\"#p\"/></div>"), []);
  });
  it('txt-1, txt-2: namespace, forbidden elements and handlers, content', () => {
    expect(text('<div>John</div>'), ['txt-1: The narrative must be a <div> element in the XHTML namespace (xmlns="http://www.w3.org/1999/xhtml") @ Patient.text.div']);
    expect(text('<div xmlns="http://www.w3.org/1999/xhtml">x<script>alert(1)</script></div>'), ['txt-1: The narrative may not contain a <script> element @ Patient.text.div']);
    expect(text('<div xmlns="http://www.w3.org/1999/xhtml"><p onclick="x()">x</p></div>'), ['txt-1: The narrative may not contain event handler attributes (on…=) @ Patient.text.div']);
    expect(text('<div xmlns="http://www.w3.org/1999/xhtml"> <p> </p></div>'), ['txt-2: The narrative must have some non-whitespace content @ Patient.text.div']);
  });
});

describe('operation inputs', () => {
  it('a local Coding.system in Parameters is the operation’s to judge ($validate-code reports it)', () => {
    expect({ resourceType: 'Parameters', parameter: [{ name: 'coding', valueCoding: { system: 'local', code: 'x' } }] }, []);
  });
});
