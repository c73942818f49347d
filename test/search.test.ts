import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BundleEntrySearch, BundleLink, Coding, Resource } from '@medplum/fhirtypes';
import { createProject, drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * FHIR search end to end (docs/rest.md): every parameter type, modifiers, prefixes, paging,
 * sorting, output shaping and errors, over real HTTP. Each seeded resource carries the tag
 * `urn:lattice:test|<set>` so a test can restrict its search to its own resources.
 */
const TAG = 'urn:lattice:test';

/** A searchset entry: the server always sends the resource and its search mode. */
type SearchEntry = { resource: Resource; search: BundleEntrySearch };

for (const driver of drivers) {
  describe(`search (${driver})`, () => {
    let server: TestServer;
    const ids: Record<string, string> = {};

    /** Creates a resource tagged with `set`; returns its id. */
    async function create(set: string, resource: Record<string, unknown>): Promise<string> {
      const res = await server.fhir('POST', `/${resource.resourceType as string}`, {
        body: { ...resource, meta: { tag: [{ system: TAG, code: set }] } },
      });
      assert.equal(res.status, 201, res.text);
      return res.body.id;
    }

    /** GET search below the FHIR base, e.g. `/Patient?name=x`. */
    const search = (path: string): Promise<ApiResponse> => server.fhir('GET', path);

    /** Ids of the matches of a search that must succeed, in Bundle order. */
    async function matchIds(path: string): Promise<string[]> {
      const res = await search(path);
      assert.equal(res.status, 200, `${path}: ${res.text}`);
      return (res.body.entry ?? []).filter((e: SearchEntry) => e.search.mode === 'match').map((e: SearchEntry) => e.resource.id);
    }

    /** Same as matchIds, as a sorted list of seeded names (for order-independent checks). */
    async function names(path: string): Promise<string[]> {
      const found = await matchIds(path);
      return Object.entries(ids).filter(([, id]) => found.includes(id)).map(([name]) => name).sort();
    }

    const inSet = (query: string): string => `/Patient?_tag=${TAG}|people&${query}`;

    before(async () => {
      server = await startServer(driver);
      ids.smith = await create('people', {
        resourceType: 'Patient',
        name: [{ family: 'Smith', given: ['Élodie'] }],
        birthDate: '1980-02-15',
        gender: 'female',
        identifier: [{ system: 'http://example.org/mrn', value: 'A1' }],
        address: [{ city: 'Paris' }],
      });
      ids.smithers = await create('people', {
        resourceType: 'Patient',
        name: [{ family: 'Smithers', given: ['Bob'] }],
        birthDate: '1990',
        gender: 'male',
        identifier: [{ system: 'http://example.org/other', value: 'A1' }],
      });
      ids.jones = await create('people', { resourceType: 'Patient', name: [{ family: 'Jones', given: ['Ann'] }], birthDate: '2001-06-10' });
      ids.obsSmith = await create('obs', {
        resourceType: 'Observation',
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code: '2339-0', display: 'Glucose' }] },
        subject: { reference: `Patient/${ids.smith}` },
        effectiveDateTime: '2021-03-04T10:20:30Z',
        valueQuantity: { value: 5.4, system: 'http://unitsofmeasure.org', code: 'mmol/L', unit: 'mmol/L' },
      });
      ids.obsSmithers = await create('obs', {
        resourceType: 'Observation',
        status: 'final',
        code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
        subject: { reference: `http://elsewhere.example/fhir/Patient/${ids.smithers}` },
        effectivePeriod: { start: '2021-01-01', end: '2021-01-31' },
      });
    });
    after(() => server.stop());

    // -- string ------------------------------------------------------------------------------

    test('string: default is a case-insensitive starts-with on any name part', async () => {
      assert.deepEqual(await names(inSet('name=SMI')), ['smith', 'smithers']);
    });

    test('string: accents and case are ignored (given=ELODIE finds Élodie)', async () => {
      assert.deepEqual(await names(inSet('given=ELODIE')), ['smith']);
    });

    test('string: a value inside a word does not match without :contains', async () => {
      assert.deepEqual(await names(inSet('family=ithers')), []);
    });

    test('string: :contains matches a substring', async () => {
      assert.deepEqual(await names(inSet('family:contains=ITHER')), ['smithers']);
    });

    test('string: :exact matches the whole value, case and accents included', async () => {
      assert.deepEqual(await names(inSet('family:exact=Smith')), ['smith']);
      assert.deepEqual(await names(inSet('family:exact=smith')), []);
      assert.deepEqual(await names(inSet('given:exact=Élodie')), ['smith']);
    });

    test('string: comma-separated values are ORed, repeated parameters ANDed', async () => {
      assert.deepEqual(await names(inSet('family=jones,smithers')), ['jones', 'smithers']);
      assert.deepEqual(await names(inSet('family=smith&given=bob')), ['smithers']);
    });

    // -- token -------------------------------------------------------------------------------

    test('token: system|code matches only that system', async () => {
      assert.deepEqual(await names(inSet('identifier=http://example.org/mrn|A1')), ['smith']);
    });

    test('token: code alone matches any system', async () => {
      assert.deepEqual(await names(inSet('identifier=A1')), ['smith', 'smithers']);
    });

    test('token: system| matches every code of the system', async () => {
      assert.deepEqual(await names(inSet('identifier=http://example.org/other|')), ['smithers']);
    });

    test('token: :not excludes the code and keeps resources without one', async () => {
      assert.deepEqual(await names(inSet('gender:not=male')), ['jones', 'smith']);
    });

    test('token: CodeableConcept codes are searchable with and without system', async () => {
      assert.deepEqual(await names(`/Observation?code=http://loinc.org|2339-0`), ['obsSmith']);
      assert.deepEqual(await names(`/Observation?code=8867-4`), ['obsSmithers']);
    });

    // -- reference ---------------------------------------------------------------------------

    test('reference: Type/id, bare id and :Type modifier', async () => {
      assert.deepEqual(await names(`/Observation?subject=Patient/${ids.smith}`), ['obsSmith']);
      assert.deepEqual(await names(`/Observation?subject=${ids.smith}`), ['obsSmith']);
      assert.deepEqual(await names(`/Observation?subject:Patient=${ids.smith}`), ['obsSmith']);
      assert.deepEqual(await names(`/Observation?subject:Group=${ids.smith}`), []);
    });

    test('reference: an absolute reference is indexed under its type and id, whatever the base', async () => {
      assert.deepEqual(await names(`/Observation?patient=Patient/${ids.smithers}`), ['obsSmithers']);
      assert.deepEqual(await names(`/Observation?subject=${server.fhirUrl}/Patient/${ids.smithers}`), ['obsSmithers']);
    });

    test('reference: chained parameter subject:Patient.family', async () => {
      assert.deepEqual(await names('/Observation?subject:Patient.family=smithers'), ['obsSmithers']);
      assert.deepEqual(await names('/Observation?subject.given=elodie'), ['obsSmith']);
    });

    // -- date --------------------------------------------------------------------------------

    test('date: partial dates match every date they cover', async () => {
      assert.deepEqual(await names(inSet('birthdate=1980')), ['smith']);
      assert.deepEqual(await names(inSet('birthdate=1980-02')), ['smith']);
      assert.deepEqual(await names(inSet('birthdate=1980-02-15')), ['smith']);
      assert.deepEqual(await names(inSet('birthdate=1980-03')), []);
    });

    test('date: a stored partial date matches a search value that contains it (1990 within eq1990)', async () => {
      assert.deepEqual(await names(inSet('birthdate=eq1990')), ['smithers']);
      assert.deepEqual(await names(inSet('birthdate=1990-06-01')), []);
    });

    test('date: prefixes ne gt lt ge le', async () => {
      assert.deepEqual(await names(inSet('birthdate=ne1980')), ['jones', 'smithers']);
      assert.deepEqual(await names(inSet('birthdate=gt1985')), ['jones', 'smithers']);
      assert.deepEqual(await names(inSet('birthdate=lt1985-01-01')), ['smith']);
      assert.deepEqual(await names(inSet('birthdate=ge1990')), ['jones', 'smithers']);
      assert.deepEqual(await names(inSet('birthdate=le1990')), ['smith', 'smithers']);
      assert.deepEqual(await names(inSet('birthdate=gt2001-06-10')), []);
    });

    test('date: prefixes sa and eb', async () => {
      assert.deepEqual(await names(inSet('birthdate=sa1990')), ['jones']);
      assert.deepEqual(await names(inSet('birthdate=eb1990')), ['smith']);
    });

    test('date: dateTime values and Periods', async () => {
      assert.deepEqual(await names('/Observation?date=2021-03-04'), ['obsSmith']);
      assert.deepEqual(await names('/Observation?date=gt2021-03-04T10:00:00Z'), ['obsSmith']);
      assert.deepEqual(await names('/Observation?date=lt2021-03-04T10:00:00Z'), ['obsSmithers']);
      assert.deepEqual(await names('/Observation?date=2021-01'), ['obsSmithers']);
      assert.deepEqual(await names('/Observation?date=2021-01-15'), []); // the period is not within that day
      assert.deepEqual(await names('/Observation?date=ap2021-01-15'), ['obsSmithers']);
    });

    // -- number / quantity / uri -------------------------------------------------------------

    test('quantity: value with implicit precision, prefixes, system and unit', async () => {
      assert.deepEqual(await names('/Observation?value-quantity=5.4'), ['obsSmith']);
      assert.deepEqual(await names('/Observation?value-quantity=5'), ['obsSmith']); // 5 means [4.5, 5.5)
      assert.deepEqual(await names('/Observation?value-quantity=5.0'), []); // 5.0 means [4.95, 5.05)
      assert.deepEqual(await names('/Observation?value-quantity=gt5|http://unitsofmeasure.org|mmol/L'), ['obsSmith']);
      assert.deepEqual(await names('/Observation?value-quantity=lt5'), []);
      assert.deepEqual(await names('/Observation?value-quantity=5.4||mg'), []);
    });

    test('token: :text matches the start of a display or text, ignoring case', async () => {
      assert.deepEqual(await names('/Observation?code:text=gluc'), ['obsSmith']);
    });

    test('number: prefixes against a decimal', async () => {
      const subject = { reference: `Patient/${ids.smith}` };
      ids.riskHigh = await create('risk', { resourceType: 'RiskAssessment', status: 'final', subject, prediction: [{ probabilityDecimal: 0.8 }] });
      ids.riskLow = await create('risk', { resourceType: 'RiskAssessment', status: 'final', subject, prediction: [{ probabilityDecimal: 0.25 }] });
      assert.deepEqual(await names('/RiskAssessment?probability=gt0.5'), ['riskHigh']);
      assert.deepEqual(await names('/RiskAssessment?probability=le0.25'), ['riskLow']);
      assert.deepEqual(await names('/RiskAssessment?probability=0.8'), ['riskHigh']);
      assert.deepEqual(await names('/RiskAssessment?probability=ne0.8'), ['riskLow']);
    });

    test('uri: exact and :below', async () => {
      const q = await create('uri', { resourceType: 'Questionnaire', status: 'active', url: 'http://example.org/q/intake' });
      ids.questionnaire = q;
      assert.deepEqual(await names('/Questionnaire?url=http://example.org/q/intake'), ['questionnaire']);
      assert.deepEqual(await names('/Questionnaire?url=http://example.org/q'), []);
      assert.deepEqual(await names('/Questionnaire?url:below=http://example.org/q'), ['questionnaire']);
    });

    // -- special parameters ------------------------------------------------------------------

    test('_id: comma-separated ids', async () => {
      assert.deepEqual(await names(`/Patient?_id=${ids.smith},${ids.jones}`), ['jones', 'smith']);
    });

    test('_lastUpdated: prefixes against the stored instant', async () => {
      const smith = (await server.fhir('GET', `/Patient/${ids.smith}`)).body;
      const at = smith.meta.lastUpdated as string;
      assert.deepEqual(await matchIds(`/Patient?_lastUpdated=${encodeURIComponent(at)}`), [ids.smith]);
      assert.deepEqual(await names(inSet('_lastUpdated=gt2000-01-01')), ['jones', 'smith', 'smithers']);
      assert.deepEqual(await names(inSet('_lastUpdated=lt2000-01-01')), []);
    });

    test(':missing=true finds resources without the element, :missing=false those with it', async () => {
      assert.deepEqual(await names(inSet('gender:missing=true')), ['jones']);
      assert.deepEqual(await names(inSet('gender:missing=false')), ['smith', 'smithers']);
    });

    // -- sorting, paging, summary, elements --------------------------------------------------

    test('_sort ascending and descending', async () => {
      assert.deepEqual(await matchIds(inSet('_sort=birthdate')), [ids.smith, ids.smithers, ids.jones]);
      assert.deepEqual(await matchIds(inSet('_sort=-birthdate')), [ids.jones, ids.smithers, ids.smith]);
      assert.deepEqual(await matchIds(inSet('_sort=family')), [ids.jones, ids.smith, ids.smithers]);
      assert.deepEqual(await matchIds(inSet('_sort=-gender,family')), [ids.smithers, ids.smith, ids.jones]);
    });

    test('_count pages through next links until the end; links keep _count and _sort', async () => {
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push(await create('paging', { resourceType: 'Patient', name: [{ family: `Page${i}` }] }));
      let res = await search(`/Patient?_tag=${TAG}|paging&_count=3&_sort=family`);
      const seen: string[] = [];
      const sizes: number[] = [];
      for (;;) {
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.total, 7);
        sizes.push(res.body.entry.length);
        seen.push(...res.body.entry.map((e: SearchEntry) => e.resource.id));
        const next = res.body.link.find((l: BundleLink) => l.relation === 'next')?.url as string | undefined;
        if (!next) break;
        const url = new URL(next);
        assert.equal(url.searchParams.get('_count'), '3');
        assert.equal(url.searchParams.get('_sort'), 'family');
        res = await server.request('GET', url.pathname + url.search);
      }
      assert.deepEqual(sizes, [3, 3, 1]);
      assert.deepEqual(seen, created);
      const previous = res.body.link.find((l: BundleLink) => l.relation === 'previous')?.url as string;
      assert.equal(new URL(previous).searchParams.get('_offset'), '3');
    });

    test('next links page by keyset (_cursor) in the default, _lastUpdated and _id orders: the same matches as _offset paging', async () => {
      const created: string[] = [];
      for (let i = 0; i < 7; i++) created.push(await create('keyset', { resourceType: 'Patient', name: [{ family: `Key${i}` }] }));
      for (const sort of ['', '&_sort=_lastUpdated', '&_sort=-_lastUpdated', '&_sort=_id', '&_sort=-_id']) {
        const all = await search(`/Patient?_tag=${TAG}|keyset&_count=100${sort}`);
        const expected = all.body.entry.map((e: SearchEntry) => e.resource.id);
        assert.equal(expected.length, 7);
        let res = await search(`/Patient?_tag=${TAG}|keyset&_count=3${sort}`);
        const seen: string[] = [];
        for (let page = 0; ; page++) {
          assert.equal(res.status, 200, res.text);
          assert.equal(res.body.total, 7, sort);
          seen.push(...res.body.entry.map((e: SearchEntry) => e.resource.id));
          const next = res.body.link.find((l: BundleLink) => l.relation === 'next')?.url as string | undefined;
          if (!next) break;
          const url = new URL(next);
          assert.match(url.searchParams.get('_cursor') ?? '', /^[A-Za-z0-9_-]+$/, `${sort}: the next link has a cursor`);
          assert.equal(url.searchParams.get('_offset'), String(3 * (page + 1)));
          res = await server.request('GET', url.pathname + url.search);
          const self = new URL(res.body.link.find((l: BundleLink) => l.relation === 'self').url as string);
          assert.equal(self.searchParams.get('_cursor'), url.searchParams.get('_cursor'), 'self repeats the cursor');
        }
        assert.deepEqual(seen, expected, sort);
      }
      // A sort by a parameter pages by _offset; a cursor with such a sort, or one the server did not make → 400.
      const byFamily = await search(`/Patient?_tag=${TAG}|keyset&_count=3&_sort=family`);
      const next = new URL(byFamily.body.link.find((l: BundleLink) => l.relation === 'next').url as string);
      assert.equal(next.searchParams.get('_cursor'), null);
      const bad = await search(`/Patient?_tag=${TAG}|keyset&_cursor=nonsense`);
      assert.equal(bad.status, 400);
      assert.equal(ooText(bad.body), "Invalid value 'nonsense' for _cursor (a next link's cursor, for the same _sort)");
      const cursor = new URL((await search(`/Patient?_tag=${TAG}|keyset&_count=3`)).body.link.find((l: BundleLink) => l.relation === 'next').url as string).searchParams.get('_cursor');
      const mixed = await search(`/Patient?_tag=${TAG}|keyset&_sort=family&_cursor=${cursor}`);
      assert.equal(mixed.status, 400);
      assert.equal(ooText(mixed.body), `Invalid value '${cursor}' for _cursor (a next link's cursor, for the same _sort)`);
    });

    test('_count defaults to 20; a _count above the 1000 maximum is accepted', async () => {
      for (let i = 0; i < 21; i++) await create('many', { resourceType: 'Patient', gender: 'other' });
      const first = await search(`/Patient?_tag=${TAG}|many`);
      assert.equal(first.body.total, 21);
      assert.equal(first.body.entry.length, 20);
      const all = await search(`/Patient?_tag=${TAG}|many&_count=5000`);
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.entry.length, 21);
      assert.equal(all.body.link.find((l: BundleLink) => l.relation === 'next'), undefined);
    });

    test('_summary=count returns the total and no entries', async () => {
      const res = await search(inSet('_summary=count'));
      assert.equal(res.status, 200);
      assert.equal(res.body.total, 3);
      assert.equal(res.body.entry, undefined);
    });

    test('_elements keeps the named elements plus id and meta, and tags SUBSETTED', async () => {
      const res = await search(`/Patient?_id=${ids.smith}&_elements=birthDate,gender`);
      assert.equal(res.status, 200);
      const patient = res.body.entry[0].resource;
      assert.deepEqual(Object.keys(patient).sort(), ['birthDate', 'gender', 'id', 'meta', 'resourceType']);
      assert.ok(patient.meta.tag.some((t: Coding) => t.code === 'SUBSETTED'));
      const self = new URL(res.body.link.find((l: BundleLink) => l.relation === 'self').url);
      assert.equal(self.searchParams.get('_elements'), 'birthDate,gender');
    });

    test('_summary=true keeps summary elements only', async () => {
      const res = await search(`/Patient?_id=${ids.smith}&_summary=true`);
      assert.equal(res.status, 200);
      const patient = res.body.entry[0].resource;
      assert.equal(patient.birthDate, '1980-02-15');
      assert.ok(patient.meta.tag.some((t: Coding) => t.code === 'SUBSETTED'));
    });

    test('Bundle: searchset with total, fullUrl and search.mode', async () => {
      const res = await search(`/Patient?_id=${ids.smith}`);
      assert.equal(res.body.resourceType, 'Bundle');
      assert.equal(res.body.type, 'searchset');
      assert.equal(res.body.total, 1);
      assert.equal(res.body.entry[0].fullUrl, `${server.fhirUrl}/Patient/${ids.smith}`);
      assert.deepEqual(res.body.entry[0].search, { mode: 'match' });
    });

    test('POST /Type/_search with a form body works like GET', async () => {
      const res = await server.fhir('POST', '/Patient/_search', {
        raw: new URLSearchParams({ _tag: `${TAG}|people`, family: 'smith' }).toString(),
        contentType: 'application/x-www-form-urlencoded',
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.entry.map((e: SearchEntry) => e.resource.id).sort(), [ids.smith, ids.smithers].sort());
    });

    // -- includes ----------------------------------------------------------------------------

    test('_include adds referenced resources with search.mode include', async () => {
      const res = await search(`/Observation?_id=${ids.obsSmith}&_include=Observation:subject`);
      assert.equal(res.status, 200);
      assert.equal(res.body.total, 1);
      assert.deepEqual(
        res.body.entry.map((e: SearchEntry) => [e.resource.id, e.search.mode]),
        [[ids.obsSmith, 'match'], [ids.smith, 'include']],
      );
    });

    test('_revinclude adds referencing resources', async () => {
      const res = await search(`/Patient?_id=${ids.smith}&_revinclude=Observation:subject`);
      assert.deepEqual(
        res.body.entry.map((e: SearchEntry) => [e.resource.id, e.search.mode]),
        [[ids.smith, 'match'], [ids.obsSmith, 'include']],
      );
    });

    // -- writes are reflected ----------------------------------------------------------------

    test('a deleted resource is not found', async () => {
      const id = await create('gone', { resourceType: 'Patient', name: [{ family: 'Deleteme' }] });
      assert.deepEqual(await matchIds('/Patient?family=deleteme'), [id]);
      assert.equal((await server.fhir('DELETE', `/Patient/${id}`)).status, 200);
      assert.deepEqual(await matchIds('/Patient?family=deleteme'), []);
      assert.deepEqual(await matchIds(`/Patient?_id=${id}`), []);
    });

    test('an updated resource is found by its new values and not by its old ones', async () => {
      const id = await create('updated', { resourceType: 'Patient', name: [{ family: 'Before' }] });
      const put = await server.fhir('PUT', `/Patient/${id}`, { body: { resourceType: 'Patient', id, name: [{ family: 'After' }] } });
      assert.equal(put.status, 200, put.text);
      assert.deepEqual(await matchIds('/Patient?family=before'), []);
      assert.deepEqual(await matchIds('/Patient?family=after'), [id]);
    });

    // -- errors ------------------------------------------------------------------------------

    async function assert400(path: string, text: string): Promise<void> {
      const res = await search(path);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.issue[0].code, 'invalid');
      assert.equal(ooText(res.body), text);
    }

    test('unknown parameter → 400 Unknown search parameter: <name> (modifier dropped)', async () => {
      await assert400('/Patient?foo=bar', 'Unknown search parameter: foo');
      await assert400('/Patient?foo:exact=bar', 'Unknown search parameter: foo');
      await assert400('/Observation?subject:Patient.foo=bar', 'Unknown search parameter: foo');
    });

    test('unknown modifier, bad date, bad number, bad _count → 400 naming parameter and value', async () => {
      await assert400('/Patient?family:below=x', "Unsupported modifier ':below' for search parameter family");
      await assert400('/Patient?birthdate=2020-13-01', "Invalid date '2020-13-01' for search parameter birthdate");
      await assert400('/Patient?birthdate=gtyesterday', "Invalid date 'gtyesterday' for search parameter birthdate");
      await assert400('/Observation?value-quantity=abc', "Invalid number 'abc' for search parameter value-quantity");
      await assert400('/Patient?_count=-1', "Invalid value '-1' for _count");
      await assert400('/Patient?gender:missing=maybe', "Invalid value 'maybe' for gender:missing (expected true or false)");
    });

    test('parameters Lattice does not implement are refused, not ignored', async () => {
      // _has, composites, _text/_content and _filter are implemented now (test/search-has.test.ts).
      await assert400('/Patient?_query=everything', 'Search parameter _query is not supported');
      await assert400('/Patient?_list=42', 'Search parameter _list is not supported');
      await assert400('/Location?near=42|13|10|km', 'Search parameter near is not supported');
    });

    test('no query string ever causes a 5xx', async () => {
      let seed = 42;
      const rand = (n: number): number => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed % n;
      };
      const paramNames = ['name', 'family:exact', 'birthdate', 'identifier', 'gender:not', 'subject', 'subject.name', 'value-quantity', '_id', '_lastUpdated', '_count', '_offset', '_sort', '_summary', '_elements', 'date', 'code:text', 'x:y:z', '_include', '', 'name:missing', 'url:above', '_has:Observation:subject:code', '_filter', 'code-value-quantity', '_content', 'code:below', 'code:in', 'identifier:of-type'];
      const pieces = ['', 'ge', 'eq2020', '|', ',', '\\', '%', '_', "'", '"', '2020-02-30', '1e999', '-', 'Patient/', 'http://x/Patient/1', '\u0000', 'é', '99999999999999999999', ':', '.', '9'.repeat(600)];
      for (let i = 0; i < 150; i++) {
        const type = ['Patient', 'Observation'][rand(2)];
        const params = new URLSearchParams();
        for (let j = 0; j <= rand(3); j++) {
          params.append(paramNames[rand(paramNames.length)], Array.from({ length: rand(4) }, () => pieces[rand(pieces.length)]).join(''));
        }
        const res = await search(`/${type}?${params}`);
        assert.ok(res.status === 200 || res.status === 400, `${type}?${params} → ${res.status} ${res.text}`);
      }
    });

    // -- tenancy -----------------------------------------------------------------------------

    test('chains and includes never reach another project', async () => {
      const a = await createProject(server, 'Search A');
      const b = await createProject(server, 'Search B');
      const bPatient = await server.fhir('POST', '/Patient', { token: b.adminToken, body: { resourceType: 'Patient', name: [{ family: 'Hidden' }] } });
      assert.equal(bPatient.status, 201, bPatient.text);
      const obs = await server.fhir('POST', '/Observation', {
        token: a.adminToken,
        body: { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: { reference: `Patient/${bPatient.body.id}` } },
      });
      assert.equal(obs.status, 201, obs.text);
      const chained = await server.fhir('GET', '/Observation?subject.family=hidden', { token: a.adminToken });
      assert.equal(chained.status, 200, chained.text);
      assert.equal(chained.body.total, 0);
      const included = await server.fhir('GET', `/Observation?_id=${obs.body.id}&_include=Observation:subject`, { token: a.adminToken });
      assert.deepEqual(included.body.entry.map((e: SearchEntry) => e.resource.id), [obs.body.id]);
      const rev = await server.fhir('GET', `/Patient?_id=${bPatient.body.id}&_revinclude=Observation:subject`, { token: b.adminToken });
      assert.deepEqual(rev.body.entry.map((e: SearchEntry) => e.resource.id), [bPatient.body.id]);
    });
  });
}
