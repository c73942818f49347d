import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { drivers, flatContains, ooText, startServer, type TestServer, sharedStorage } from './harness.js';
import { importAsync, latticeArgs } from './support/cli.js';
import { zipFolder } from './support/zip.js';

/**
 * LOINC (docs/terminology.md#loinc): the synthetic release in test/fixtures/loinc (made-up
 * codes in the release's CSV layout) is loaded from a .zip through `lattice import --format
 * loinc`, then read through lookup, validate-code, expand with LOINC's filters and its implicit
 * value sets; a second version goes in through a running server (`--url`).
 */

const FIXTURE = join(projectRoot, 'test/fixtures/loinc');
const LOINC = 'http://loinc.org';

type Contains = { code: string; display?: string; contains?: Contains[] };
type Param = { name: string; valueString?: string; valueCode?: string; valueBoolean?: boolean; valueCoding?: { code?: string; display?: string }; part?: Param[] };

/** `property` parameters of a lookup as `code=value` texts (Coding: its code). */
function properties(params: Param[]): string[] {
  return params
    .filter((p) => p.name === 'property')
    .map((p) => {
      const part = (n: string) => p.part?.find((x) => x.name === n);
      const v = part('value');
      return `${part('code')?.valueCode}=${v?.valueCoding?.code ?? v?.valueCode ?? v?.valueString ?? v?.valueBoolean}`;
    });
}

function designations(params: Param[]): string[] {
  return params
    .filter((p) => p.name === 'designation')
    .map((p) => {
      const part = (n: string) => p.part?.find((x) => x.name === n);
      return `${part('language')?.valueCode ?? ''}|${part('use')?.valueCoding?.code ?? ''}|${part('value')?.valueString}`;
    });
}

const cliAsync = (args: string[], env: NodeJS.ProcessEnv) => importAsync(args, env);

for (const driver of drivers) {
  describe(`LOINC (${driver})`, () => {
    let dir: string;
    let server: TestServer;

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'lattice-loinc-'));
      const zip = join(dir, 'Loinc_release.zip');
      zipFolder(FIXTURE, zip, FIXTURE); // entries under Loinc_1.01/…: the version comes from that name
      const { storage, env } = await sharedStorage(driver, dir);
      const run = spawnSync(process.execPath, latticeArgs('import', '--format', 'loinc', zip), { cwd: projectRoot, env, encoding: 'utf8' });
      assert.equal(run.status, 0, run.stderr);
      // 6 terms, 12 parts and one only a part link names, the hierarchy's root, 2 answer lists, 3 answers.
      assert.match(run.stdout, /imported 1 resources \(1 CodeSystems, 0 ValueSets, 25 concepts; 0 skipped\)/);
      assert.match(run.stderr, /LOINC 1\.01 \[#+\] 100%/);
      server = await startServer(driver, storage);
    });
    after(async () => {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('lookup of a term: long common name, designations per language, parts as codes, the hierarchy', async () => {
      const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=90001-9`);
      assert.equal(res.status, 200, res.text);
      const params = res.body.parameter as Param[];
      const get = (n: string) => params.find((p) => p.name === n);
      assert.equal(get('name')?.valueString, 'LOINC');
      assert.equal(get('version')?.valueString, '1.01');
      assert.equal(get('display')?.valueString, 'Zorbium [Mass/volume] in Blood');
      assert.equal(get('definition')?.valueString, 'A made-up analyte, "zorbium", measured in blood.');
      const d = designations(params);
      assert.deepEqual(d.slice(0, 2), ['en-US|preferredForLanguage|Zorbium [Mass/volume] in Blood', 'en-US|LONG_COMMON_NAME|Zorbium [Mass/volume] in Blood']);
      for (const expected of [
        'en-US|SHORTNAME|Zorbium Bld-mCnc',
        'en-US|ConsumerName|Zorbium, Blood',
        'de-DE|LONG_COMMON_NAME|Zorbium [Masse/Volumen] in Blut',
        'de-DE|SHORTNAME|Zorbium Blut-mKonz',
        'de-DE|LinguisticVariantDisplayName|Zorbium (Blut) [Masse/Volumen]',
      ]) {
        assert.ok(d.includes(expected), `${expected} in ${d.join('; ')}`);
      }
      // Parts, the parent and answer lists by their code alone; CLASSTYPE described; the release
      // bookkeeping (VersionFirstReleased, VersionLastChanged, …) only when asked for.
      assert.deepEqual(properties(params), [
        'parent=LP900001-9',
        'inactive=false',
        'COMPONENT=LP900001-9',
        'PROPERTY=LP900002-7',
        'TIME_ASPCT=LP900003-5',
        'SYSTEM=LP900004-3',
        'SCALE_TYP=LP900006-8',
        'CLASS=LP900009-2',
        'STATUS=ACTIVE',
        'CLASSTYPE=1',
        'ORDER_OBS=Both',
        'UNITSREQUIRED=Y',
        'EXAMPLE_UCUM_UNITS=mg/dL',
        'RELATEDNAMES2=Zorb; Level; Whole blood',
      ]);
      const partsOf = (n: string) => params.find((x) => x.name === 'property' && x.part?.[0]?.valueCode === n)?.part;
      assert.deepEqual(partsOf('COMPONENT'), [{ name: 'code', valueCode: 'COMPONENT' }, { name: 'value', valueCode: 'LP900001-9' }]);
      assert.deepEqual(partsOf('parent'), [{ name: 'code', valueCode: 'parent' }, { name: 'value', valueCode: 'LP900001-9' }]);
      assert.deepEqual(partsOf('CLASSTYPE'), [{ name: 'code', valueCode: 'CLASSTYPE' }, { name: 'value', valueString: '1' }, { name: 'description', valueString: 'Laboratory class' }]);
      const asked = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=90001-9&property=VersionFirstReleased&property=VersionLastChanged&property=STATUS`);
      assert.deepEqual(properties(asked.body.parameter), ['STATUS=ACTIVE', 'VersionFirstReleased=1.00', 'VersionLastChanged=1.01']);
    });

    test('lookup of a part, an answer list and an answer', async () => {
      const part = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=LP900001-9`);
      assert.equal(part.status, 200, part.text);
      const pp = part.body.parameter as Param[];
      assert.equal(pp.find((x) => x.name === 'display')?.valueString, 'Zorbium');
      assert.deepEqual(
        properties(pp).filter((x) => /^(parent|child)=/.test(x)).sort(),
        ['child=90001-9', 'child=90002-7', 'child=90003-5', 'child=90006-8', 'parent=LP900009-2'],
      );
      // A part Part.csv leaves out, named by a part link: a code with the link's name.
      const linked = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=LP900015-9`);
      assert.equal(linked.status, 200, linked.text);
      assert.equal((linked.body.parameter as Param[]).find((x) => x.name === 'display')?.valueString, 'Pt');
      const rested = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=90004-3&property=TIME_ASPCT`);
      assert.deepEqual(properties(rested.body.parameter), ['TIME_ASPCT=LP900015-9']);
      const list = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=LL9001-9`);
      assert.equal(list.status, 200, list.text);
      assert.equal((list.body.parameter as Param[]).find((x) => x.name === 'display')?.valueString, 'Yes|No');
      assert.deepEqual(properties(list.body.parameter).filter((x) => !x.startsWith('inactive')).sort(), ['Answer=LA90001-9', 'Answer=LA90002-7', 'answers-for=90004-3']);
      const answer = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=LA90001-9`);
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(properties(answer.body.parameter).filter((x) => !x.startsWith('inactive')).sort(), ['AnswerList=LL9001-9', 'AnswerList=LL9002-7']);
    });

    test('validate-code: a discouraged term is valid, inactive, with a warning naming its status', async () => {
      const text = "The concept '90002-7' has a status of DISCOURAGED and its use should be reviewed";
      const get = (body: { parameter: Param[] }, n: string) => body.parameter.find((p) => p.name === n);
      for (const path of [`/CodeSystem/$validate-code?url=${LOINC}&code=90002-7`, `/ValueSet/$validate-code?url=${LOINC}/vs/LP900001-9&system=${LOINC}&code=90002-7`]) {
        const res = await server.fhir('GET', path);
        assert.equal(res.status, 200, res.text);
        assert.equal(get(res.body, 'result')?.valueBoolean, true);
        assert.equal(get(res.body, 'inactive')?.valueBoolean, true);
        assert.equal(get(res.body, 'status')?.valueCode, 'DISCOURAGED');
        assert.equal(get(res.body, 'message')?.valueString, text);
        const issues = (get(res.body, 'issues') as unknown as { resource: { issue: Array<{ severity: string; details: { text: string }; extension?: Array<{ valueString: string }> }> } }).resource.issue;
        assert.deepEqual(issues.map((i) => [i.severity, i.details.text, i.extension?.[0]?.valueString]), [['warning', text, 'INACTIVE_CONCEPT_FOUND']]);
      }
      // activeOnly leaves it out of an expansion, as any inactive code.
      const active = await server.fhir('GET', `/ValueSet/$expand?url=${LOINC}/vs/LP900001-9&activeOnly=true`);
      assert.deepEqual(flatContains<Contains>(active.body.expansion.contains).map((c) => c.code).sort(), ['90001-9', '90006-8']);
    });

    test('validate-code: a deprecated term is inactive; an unknown code names the release version', async () => {
      const old = await server.fhir('GET', `/CodeSystem/$validate-code?url=${LOINC}&code=90003-5`);
      assert.equal(old.status, 200, old.text);
      const get = (body: { parameter: Param[] }, n: string) => body.parameter.find((p) => p.name === n);
      assert.equal(get(old.body, 'result')?.valueBoolean, true);
      assert.equal(get(old.body, 'inactive')?.valueBoolean, true);
      assert.equal(get(old.body, 'message')?.valueString, "The concept '90003-5' has a status of DEPRECATED and inactive and its use should be reviewed");
      const unknown = await server.fhir('GET', `/CodeSystem/$validate-code?url=${LOINC}&code=99999-9`);
      assert.equal(get(unknown.body, 'result')?.valueBoolean, false);
      assert.equal(get(unknown.body, 'message')?.valueString, "Unknown code '99999-9' in the CodeSystem 'http://loinc.org' version '1.01'");
    });

    /** The codes an inline value set with these filters expands to, sorted. */
    async function expandFilter(...filter: Array<{ property: string; op: string; value: string }>): Promise<string[]> {
      const res = await server.fhir('POST', '/ValueSet/$expand', {
        body: {
          resourceType: 'Parameters',
          parameter: [{ name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: LOINC, filter }] } } }],
        },
      });
      assert.equal(res.status, 200, res.text);
      return flatContains<Contains>(res.body.expansion.contains)
        .map((c) => c.code)
        .sort();
    }

    test("expand: LOINC's filters", async () => {
      const zorbium = ['90001-9', '90002-7', '90003-5', '90006-8'];
      assert.deepEqual(await expandFilter({ property: 'COMPONENT', op: '=', value: 'LP900001-9' }), zorbium);
      // a part property by the part's name, ignoring case
      assert.deepEqual(await expandFilter({ property: 'COMPONENT', op: '=', value: 'zorbium' }), zorbium);
      assert.deepEqual(await expandFilter({ property: 'SCALE_TYP', op: '=', value: 'DOC' }), ['90005-0']);
      assert.deepEqual(await expandFilter({ property: 'CLASS', op: 'regex', value: 'CH.*' }), zorbium);
      assert.deepEqual(await expandFilter({ property: 'CLASS', op: 'regex', value: 'SURVEY\\..*' }), ['90004-3']);
      assert.deepEqual(await expandFilter({ property: 'STATUS', op: '=', value: 'DISCOURAGED' }), ['90002-7']);
      assert.deepEqual(await expandFilter({ property: 'CLASSTYPE', op: '=', value: '4' }), ['90004-3']);
      assert.deepEqual(await expandFilter({ property: 'ORDER_OBS', op: '=', value: 'Order' }), ['90006-8']);
      assert.deepEqual(await expandFilter({ property: 'document-kind', op: 'exists', value: 'true' }), ['90005-0']);
      assert.deepEqual(await expandFilter({ property: 'copyright', op: '=', value: '3rdParty' }), ['90005-0']);
      assert.deepEqual(await expandFilter({ property: 'copyright', op: '=', value: 'LOINC' }), ['90001-9', '90002-7', '90003-5', '90004-3', '90006-8']);
      assert.deepEqual(await expandFilter({ property: 'LIST', op: '=', value: 'LL9002-7' }), ['LA90001-9', 'LA90002-7', 'LA90003-5']);
      assert.deepEqual(await expandFilter({ property: 'answers-for', op: '=', value: '90004-3' }), ['LA90001-9', 'LA90002-7']);
      assert.deepEqual(await expandFilter({ property: 'answers-for', op: '=', value: 'LL9001-9' }), ['LA90001-9', 'LA90002-7']);
      assert.deepEqual(await expandFilter({ property: 'parent', op: '=', value: 'LP900001-9' }), zorbium);
      assert.deepEqual(await expandFilter({ property: 'ancestor', op: '=', value: 'LP900009-2' }), ['LP900001-9', ...zorbium].sort());
      assert.deepEqual(await expandFilter({ property: 'concept', op: 'is-a', value: 'LP900009-2' }), ['LP900001-9', 'LP900009-2', ...zorbium].sort());
      // filters are ANDed, LOINC's and the index's alike
      assert.deepEqual(await expandFilter({ property: 'COMPONENT', op: '=', value: 'Zorbium' }, { property: 'SYSTEM', op: '=', value: 'LP900004-3' }), ['90001-9', '90006-8']);
    });

    test('a copyright filter other than LOINC or 3rdParty is refused', async () => {
      const res = await server.fhir('POST', '/ValueSet/$expand', {
        body: {
          resourceType: 'Parameters',
          parameter: [
            { name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: LOINC, filter: [{ property: 'copyright', op: '=', value: 'Other' }] }] } } },
          ],
        },
      });
      assert.equal(res.status, 400, res.text);
      assert.equal(ooText(res.body), "The value 'Other' of the LOINC copyright filter is not LOINC or 3rdParty");
    });

    test('implicit value sets: http://loinc.org/vs, /vs/<answer list>, /vs/<part>', async () => {
      const list = await server.fhir('GET', `/ValueSet/$expand?url=${LOINC}/vs/LL9001-9`);
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.version, '1.01');
      assert.deepEqual(flatContains<Contains>(list.body.expansion.contains).map((c) => `${c.code} ${c.display}`), ['LA90001-9 Yes', 'LA90002-7 No']);
      const part = await server.fhir('GET', `/ValueSet/$expand?url=${LOINC}/vs/LP900001-9`);
      assert.equal(part.status, 200, part.text);
      assert.deepEqual(flatContains<Contains>(part.body.expansion.contains).map((c) => c.code).sort(), ['90001-9', '90002-7', '90003-5', '90006-8']);
      const all = await server.fhir('GET', `/ValueSet/$expand?url=${LOINC}/vs&count=0`);
      assert.equal(all.status, 200, all.text);
      assert.equal(all.body.expansion.total, 25);
      const outside = await server.fhir('GET', `/ValueSet/$validate-code?url=${LOINC}/vs/LL9001-9&system=${LOINC}&code=LA90003-5`);
      assert.equal(outside.status, 200, outside.text);
      assert.equal(
        outside.body.parameter.find((p: Param) => p.name === 'message')?.valueString,
        "The provided code 'http://loinc.org#LA90003-5' was not found in the value set 'http://loinc.org/vs/LL9001-9|1.01'",
      );
      const unknown = await server.fhir('GET', `/ValueSet/$expand?url=${LOINC}/vs/LL1234-5`);
      assert.equal(unknown.status, 400, unknown.text);
      assert.equal(ooText(unknown.body), 'ValueSet http://loinc.org/vs/LL1234-5 not found');
    });

    test('a second version through a running server (--url); TerminologyCapabilities lists both', async () => {
      const run = await cliAsync(['--format', 'loinc', join(FIXTURE, 'Loinc_1.01'), '--version', '1.02', '--url', server.baseUrl, '--token', server.adminToken as string], {
        ...process.env,
        LOG_LEVEL: 'warn',
      });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /imported 1 resources \(1 CodeSystems, 0 ValueSets, 25 concepts; 0 skipped\)/);
      const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${LOINC}&code=90001-9&version=1.02`);
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.parameter.find((p: Param) => p.name === 'version')?.valueString, '1.02');
      const caps = await server.fhir('GET', '/metadata?mode=terminology');
      assert.deepEqual(
        caps.body.codeSystem.find((c: { uri: string }) => c.uri === LOINC),
        { uri: LOINC, version: [{ code: '1.02', isDefault: true }, { code: '1.01' }] },
      );
    });

    test('--version without --format loinc, and an unknown format, print the usage', () => {
      for (const args of [['--version', '1', 'x.json'], ['--format', 'csv', 'x']]) {
        const run = spawnSync(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, encoding: 'utf8' });
        assert.equal(run.status, 2);
        assert.match(run.stderr, /Usage:/);
      }
    });
  });
}
