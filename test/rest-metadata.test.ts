import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CapabilityStatement, CapabilityStatementRestResource } from '@medplum/fhirtypes';
import { drivers, startServer, type TestServer } from './harness.js';
import { searchParametersFor } from '../src/fhir/definitions.js';

/**
 * The CapabilityStatement tells the truth (docs/rest.md#metadata): this test reads `/metadata`
 * and tries what it lists, as a plain project member — every search parameter of every type
 * with each modifier it states, every `_include`/`_revinclude` value, every compartment, both
 * patch formats, the interactions, and every operation at each level its definition declares.
 * Nothing listed may be refused; a search that is refused must not be listed.
 */

/** A value of the parameter's type that parses (what is searched need not exist). */
function sampleValue(type: string | undefined, modifier: string | undefined): string {
  if (modifier === 'missing') return 'true';
  switch (type) {
    case 'token':
      if (modifier === 'text') return 'x';
      if (modifier === 'below' || modifier === 'above') return 'http://terminology.hl7.org/CodeSystem/observation-category|laboratory';
      if (modifier === 'in' || modifier === 'not-in') return 'http://hl7.org/fhir/ValueSet/administrative-gender';
      if (modifier === 'of-type') return 'http://terminology.hl7.org/CodeSystem/v2-0203|MR|x';
      return 'http://example.org/s|x';
    case 'reference':
      return 'Patient/x';
    case 'date':
      return 'ge2020-01-01';
    case 'number':
      return 'gt1';
    case 'quantity':
      return 'gt1||mg';
    case 'uri':
      return 'http://example.org/x';
    default:
      return 'x';
  }
}

function modifiersOf(documentation: string | undefined): string[] {
  const m = /^Modifiers: (.*)$/.exec(documentation ?? '');
  return m ? m[1].split(', ').map((x) => x.replace(/^:/, '')) : [];
}

/** Search URLs a resource entry of the statement asks to work. */
function searchUrls(resource: CapabilityStatementRestResource): string[] {
  const type = resource.type;
  const urls: string[] = [];
  for (const sp of resource.searchParam ?? []) {
    if (sp.name === '_has') {
      // Reverse chaining through the first type the statement says can reference this one.
      const [source, param] = (resource.searchRevInclude?.[0] ?? '').split(':');
      urls.push(`${type}?_has:${source}:${param}:_id=x`);
      continue;
    }
    if (sp.name === '_filter') {
      urls.push(`${type}?_filter=${encodeURIComponent('_id eq x or (_lastUpdated gt 2020-01-01 and not(_id ne y))')}`);
      continue;
    }
    const name = encodeURIComponent(sp.name);
    const components = /^Components: (.*)$/.exec(sp.documentation ?? '')?.[1];
    if (sp.type === 'composite') {
      assert.ok(components, `${type}.${sp.name} lists no components`);
      urls.push(`${type}?${name}=${encodeURIComponent(components.split('$').map((t) => sampleValue(t, undefined)).join('$'))}`);
      continue;
    }
    urls.push(`${type}?${name}=${encodeURIComponent(sampleValue(sp.type, undefined))}`);
    for (const modifier of modifiersOf(sp.documentation)) {
      if (modifier === 'type') urls.push(`${type}?${name}:Patient=x`);
      else urls.push(`${type}?${name}:${modifier}=${encodeURIComponent(sampleValue(sp.type, modifier))}`);
    }
  }
  for (const include of resource.searchInclude ?? []) urls.push(`${type}?_include=${encodeURIComponent(include)}`);
  for (const include of resource.searchRevInclude ?? []) urls.push(`${type}?_revinclude=${encodeURIComponent(include)}`);
  return urls;
}

for (const driver of drivers) {
  describe(`CapabilityStatement walk (${driver})`, () => {
    let server: TestServer;
    let cs: CapabilityStatement;
    before(async () => {
      server = await startServer(driver);
      const res = await server.fhir('GET', '/metadata', { token: null });
      assert.equal(res.status, 200, res.text);
      cs = res.body;
    });
    after(() => server.stop());

    const resources = () => cs.rest?.[0]?.resource ?? [];

    test('the statement is built once: asked again it is the same text, dated when it was built; _pretty still indents it', async () => {
      const again = await server.fhir('GET', '/metadata', { token: null });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.date, cs.date);
      assert.deepEqual(again.body, cs);
      const pretty = await server.fhir('GET', '/metadata?_pretty=true', { token: null });
      assert.equal(pretty.status, 200, pretty.text);
      assert.ok(pretty.text.startsWith('{\n  "resourceType": "CapabilityStatement"'), pretty.text.slice(0, 80));
      assert.deepEqual(pretty.body, cs);
    });

    test('states patch formats, includes, compartments and modifiers', () => {
      assert.deepEqual(cs.patchFormat, ['application/json-patch+json', 'application/fhir+json']);
      const observation = resources().find((r) => r.type === 'Observation');
      assert.ok(observation?.searchInclude?.includes('Observation:subject'));
      assert.ok(resources().find((r) => r.type === 'Patient')?.searchRevInclude?.includes('Observation:subject'));
      assert.equal(observation?.searchParam?.find((p) => p.name === 'code')?.documentation, 'Modifiers: :missing, :not, :text, :below, :above, :in, :not-in');
      assert.equal(resources().find((r) => r.type === 'Patient')?.searchParam?.find((p) => p.name === 'identifier')?.documentation, 'Modifiers: :missing, :not, :text, :of-type, :below, :above, :in, :not-in');
      assert.ok(resources().find((r) => r.type === 'Patient')?.searchParam?.some((p) => p.name === '_has'));
      assert.equal(observation?.searchParam?.find((p) => p.name === 'code-value-quantity')?.documentation, 'Components: token$quantity');
      // Every R4 composite parameter is listed (all of their components are indexable).
      assert.ok(resources().flatMap((r) => r.searchParam ?? []).filter((p) => p.type === 'composite').length >= 60);
      assert.deepEqual(cs.rest?.[0]?.compartment, [
        'http://hl7.org/fhir/CompartmentDefinition/patient',
        'http://hl7.org/fhir/CompartmentDefinition/encounter',
        'http://hl7.org/fhir/CompartmentDefinition/relatedPerson',
        'http://hl7.org/fhir/CompartmentDefinition/practitioner',
        'http://hl7.org/fhir/CompartmentDefinition/device',
      ]);
    });

    test('every listed search parameter, modifier, _include and _revinclude is accepted (every type)', async () => {
      const failures: string[] = [];
      let tried = 0;
      for (const resource of resources()) {
        const urls = searchUrls(resource);
        // One batch per type: each entry is the search a client would send.
        const res = await server.fhir('POST', '', {
          body: { resourceType: 'Bundle', type: 'batch', entry: urls.map((url) => ({ request: { method: 'GET', url: `${url}&_count=1` } })) },
        });
        assert.equal(res.status, 200, res.text.slice(0, 300));
        res.body.entry.forEach((e: { response: { status: string; outcome?: { issue: Array<{ details?: { text?: string } }> } } }, i: number) => {
          tried++;
          if (e.response.status !== '200 OK') failures.push(`${urls[i]} → ${e.response.status} ${e.response.outcome?.issue?.[0]?.details?.text ?? ''}`);
        });
      }
      assert.deepEqual(failures.slice(0, 40), []);
      assert.ok(tried > 5000, `only ${tried} searches tried`);
    });

    test('nothing that works is left out: an R4 parameter the statement does not list is refused', async () => {
      for (const type of ['Patient', 'Observation', 'Location', 'Encounter', 'ValueSet']) {
        const listed = new Set((resources().find((r) => r.type === type)?.searchParam ?? []).map((p) => p.name));
        const unlisted = [...searchParametersFor(type).keys()].filter((code) => !listed.has(code));
        for (const code of unlisted) {
          const res = await server.fhir('GET', `/${type}?${code}=x`);
          assert.equal(res.status, 400, `${type}?${code}: ${res.text.slice(0, 200)}`);
          assert.equal(res.body.issue[0].details.text, `Search parameter ${code} is not supported`);
        }
      }
    });

    test('every type answers search-type and history-type; a sample of types every instance interaction and both patch formats', async () => {
      for (const resource of resources()) {
        const codes = (resource.interaction ?? []).map((i) => i.code);
        assert.ok(codes.includes('search-type') && codes.includes('history-type'), resource.type);
        for (const path of [`/${resource.type}?_count=1`, `/${resource.type}/_history?_count=1`]) {
          const res = await server.fhir('GET', path);
          assert.equal(res.status, 200, `${path}: ${res.text.slice(0, 200)}`);
        }
      }
      const samples: Array<Record<string, unknown>> = [
        { resourceType: 'Patient', name: [{ family: 'Walk' }] },
        { resourceType: 'Observation', status: 'final', code: { text: 'walk' } },
        { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' } },
        { resourceType: 'Basic', code: { text: 'walk' } },
      ];
      for (const body of samples) {
        const type = body.resourceType as string;
        const listed = resources().find((r) => r.type === type)?.interaction?.map((i) => i.code) ?? [];
        assert.deepEqual(listed, ['read', 'vread', 'update', 'patch', 'delete', 'history-instance', 'history-type', 'create', 'search-type']);
        const created = await server.fhir('POST', `/${type}`, { body });
        assert.equal(created.status, 201, created.text);
        const id = created.body.id as string;
        assert.equal((await server.fhir('GET', `/${type}/${id}`)).status, 200);
        assert.equal((await server.fhir('GET', `/${type}/${id}/_history/1`)).status, 200);
        assert.equal((await server.fhir('PUT', `/${type}/${id}`, { body: { ...created.body, meta: undefined, language: 'en' } })).status, 200);
        const jsonPatch = await server.fhir('PATCH', `/${type}/${id}`, { raw: JSON.stringify([{ op: 'replace', path: '/language', value: 'de' }]), contentType: 'application/json-patch+json' });
        assert.equal(jsonPatch.status, 200, jsonPatch.text);
        const fhirPathPatch = await server.fhir('PATCH', `/${type}/${id}`, {
          body: { resourceType: 'Parameters', parameter: [{ name: 'operation', part: [{ name: 'type', valueCode: 'replace' }, { name: 'path', valueString: `${type}.language` }, { name: 'value', valueCode: 'fr' }] }] },
          contentType: 'application/fhir+json',
        });
        assert.equal(fhirPathPatch.status, 200, fhirPathPatch.text);
        assert.equal((await server.fhir('GET', `/${type}/${id}/_history`)).body.total, 4);
        assert.equal((await server.fhir('DELETE', `/${type}/${id}`)).status, 200);
      }
      const system = cs.rest?.[0]?.interaction?.map((i) => i.code);
      assert.deepEqual(system, ['transaction', 'batch', 'search-system', 'history-system']);
      assert.equal((await server.fhir('GET', '/_history?_count=1')).status, 200);
    });

    test('every listed compartment answers compartment search', async () => {
      const make = async (body: Record<string, unknown>) => (await server.fhir('POST', `/${body.resourceType as string}`, { body })).body.id as string;
      const patient = await make({ resourceType: 'Patient' });
      const instances: Record<string, string> = {
        patient,
        encounter: await make({ resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' } }),
        relatedPerson: await make({ resourceType: 'RelatedPerson', patient: { reference: `Patient/${patient}` } }),
        practitioner: await make({ resourceType: 'Practitioner' }),
        device: await make({ resourceType: 'Device' }),
      };
      for (const canonical of cs.rest?.[0]?.compartment ?? []) {
        const code = canonical.split('/').pop() as string;
        const type = code[0].toUpperCase() + code.slice(1);
        const res = await server.fhir('GET', `/${type}/${instances[code]}/*`);
        assert.equal(res.status, 200, `${canonical}: ${res.text.slice(0, 200)}`);
        assert.ok(res.body.total >= 1, canonical);
      }
    });

    test('every listed operation is accepted at each level its definition declares (missing inputs may be a 400, never 404/405/501)', async () => {
      const patient = (await server.fhir('POST', '/Patient', { body: { resourceType: 'Patient' } })).body.id as string;
      const encounter = (await server.fhir('POST', '/Encounter', { body: { resourceType: 'Encounter', status: 'finished', class: { code: 'AMB' } } })).body.id as string;
      const instance: Record<string, string> = { Patient: patient, Encounter: encounter };
      const calls: string[] = [];
      for (const op of cs.rest?.[0]?.operation ?? []) calls.push(`/$${op.name}`);
      for (const resource of resources()) {
        for (const op of resource.operation ?? []) {
          const def = await server.fhir('GET', `/OperationDefinition?url=${encodeURIComponent(op.definition)}`);
          const definition = def.body.entry?.[0]?.resource;
          assert.ok(definition, `${op.definition} is not served`);
          if (definition.type) calls.push(`/${resource.type}/$${op.name}`);
          if (definition.instance && instance[resource.type]) calls.push(`/${resource.type}/${instance[resource.type]}/$${op.name}`);
        }
      }
      const refused: string[] = [];
      for (const path of new Set(calls)) {
        const res = await server.fhir('POST', path, { body: { resourceType: 'Parameters' } });
        if ([404, 405, 501].includes(res.status) || res.status >= 500) refused.push(`${path} → ${res.status} ${res.text.slice(0, 200)}`);
      }
      assert.deepEqual(refused, []);
      assert.ok(calls.some((c) => c.endsWith('/$everything')));
    });
  });
}
