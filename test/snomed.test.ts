import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { projectRoot } from '../src/paths.js';
import { importRf2 } from '../src/terminology/store/rf2-import.js';
import { spawn } from 'node:child_process';
import { drivers, ooText, startServer, type TestServer } from './harness.js';
import { latticeArgs } from './support/cli.js';
import { zipFolder } from './support/zip.js';

/**
 * SNOMED CT loaded from RF2 (docs/terminology.md#snomed-ct), on the synthetic fixture
 * (test/fixtures/rf2/README.md): lookup with designations, attributes and concrete values,
 * validate-code of inactive codes and displays, subsumption from the inferred hierarchy,
 * refset and hierarchy filters, the implicit `?fhir_vs` value sets, and two editions side by side.
 */

const SCT = 'http://snomed.info/sct';
const FIXTURE = join(projectRoot, 'test', 'fixtures', 'rf2');
const V1 = 'http://snomed.info/sct/9000001003/version/20240131';
const V2 = 'http://snomed.info/sct/9000001003/version/20250131';
const quiet = () => new Writable({ write: (_c, _e, done) => done() });

type Param = { name: string; valueString?: string; valueCode?: string; valueBoolean?: boolean; valueInteger?: number; valueDecimal?: number; part?: Param[] };
const param = (body: { parameter?: Param[] }, name: string) => body.parameter?.find((p) => p.name === name);
const part = (p: Param, name: string) => p.part?.find((x) => x.name === name);
/** `code=value (description)` of every property, in order. */
const properties = (body: { parameter?: Param[] }) =>
  (body.parameter ?? [])
    .filter((p) => p.name === 'property')
    .map((p) => {
      const v = part(p, 'value');
      const value = v?.valueCode ?? v?.valueString ?? v?.valueBoolean ?? v?.valueInteger ?? v?.valueDecimal ?? (v as { valueDateTime?: string })?.valueDateTime;
      const label = part(p, 'code-display')?.valueString;
      const description = part(p, 'description')?.valueString;
      return `${part(p, 'code')?.valueCode}${label ? ` [${label}]` : ''}=${value}${description ? ` (${description})` : ''}`;
    });
function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, latticeArgs('import', ...args), { cwd: projectRoot, env: { ...process.env, LOG_LEVEL: 'warn' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += String(c)));
    child.stderr.on('data', (c: Buffer) => (stderr += String(c)));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
const codes = (body: { expansion?: { contains?: Array<{ code: string }> } }) => (body.expansion?.contains ?? []).map((c) => c.code).sort();

for (const driver of drivers) {
  describe(`SNOMED CT from RF2 (${driver})`, () => {
    let server: TestServer;
    let dir: string;
    before(async () => {
      server = await startServer(driver);
      dir = mkdtempSync(join(tmpdir(), 'lattice-rf2-'));
      const summary = await importRf2(FIXTURE, server.app, { out: quiet() });
      assert.equal(summary.concepts, 24);
    });
    after(async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    test('$lookup: the en-US preferred term, descriptions as designations, attributes, the inferred hierarchy', async () => {
      const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006`);
      assert.equal(res.status, 200, res.text);
      assert.equal(param(res.body, 'version')?.valueString, V1);
      // An edition is named by its canonical.
      assert.equal(param(res.body, 'name')?.valueString, `${SCT}|${V1}`);
      assert.equal(param(res.body, 'display')?.valueString, 'Heart illness');
      assert.equal(param(res.body, 'definition')?.valueString, 'An illness of a heart part.');
      const designations = (res.body.parameter as Param[])
        .filter((p) => p.name === 'designation')
        .map((p) => `${part(p, 'language')?.valueCode}|${(part(p, 'use') as { valueCoding?: { code: string } })?.valueCoding?.code}|${part(p, 'value')?.valueString}`);
      // Active descriptions only (the inactive "Heart illness NOS" is not one), the display once and first.
      assert.deepEqual(designations, [
        'en|900000000000013009|Heart illness',
        'en|900000000000003001|Heart illness (disorder)',
        'en|900000000000013009|Cardiac illness',
        'en|900000000000550004|An illness of a heart part.',
      ]);
      assert.deepEqual(properties(res.body), [
        'parent=1002007 (Illness)',
        'child=1010008 (Heart and lung illness)',
        'inactive=false',
        'effectiveTime=2024-01-31',
        '1007001 [Site]=1004008 (Heart part)',
      ]);
    });

    test('$lookup: moduleId and sufficientlyDefined when asked for; concrete values typed; stated and inactive relationships left out', async () => {
      const asked = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006&property=moduleId&property=sufficientlyDefined`);
      assert.deepEqual(properties(asked.body), ['moduleId=9000001003 (Synthetic test module)', 'sufficientlyDefined=true']);
      // The necessary normal form: proximal primitive supertypes refined by the inferred attributes.
      const normal = async (code: string) => {
        const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=${code}&property=normalForm&property=normalFormTerse`);
        return properties(res.body);
      };
      assert.deepEqual(await normal('1010008'), [
        'normalForm=1001000|Finding|:{1007001|Site|=1004008|Heart part|},{1007001|Site|=1005009|Lung part|}',
        'normalFormTerse=1001000:{1007001=1004008},{1007001=1005009}',
      ]);
      assert.deepEqual(await normal('1012000'), ['normalForm=<<<1001000|Finding|', 'normalFormTerse=<<<1001000']);
      // A fully defined concept's form has no `<<<`; concrete values are numbers.
      assert.deepEqual(await normal('1016002'), [
        'normalForm=1013005|Product|:1014004|Count of units|=#2,{1015003|Strength value|=#2.5}',
        'normalFormTerse=1013005:1014004=#2,{1015003=#2.5}',
      ]);
      const tablet = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1016002`);
      assert.deepEqual(properties(tablet.body), [
        'parent=1013005 (Product)',
        'inactive=false',
        'effectiveTime=2024-01-31',
        '1014004 [Count of units]=2',
        '1015003 [Strength value]=2.5',
      ]);
      const growth = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1012000`);
      assert.deepEqual(properties(growth.body), ['parent=1002007 (Illness)', 'inactive=false', 'effectiveTime=2024-01-31']);
    });

    test('$validate-code: an inactive concept is valid with the inactive warning; an inactive description is a former display; a wrong display is named with the valid ones', async () => {
      const inactive = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=1011007`);
      assert.equal(param(inactive.body, 'result')?.valueBoolean, true);
      assert.equal(param(inactive.body, 'inactive')?.valueBoolean, true);
      assert.equal(param(inactive.body, 'message')?.valueString, "The concept '1011007' has a status of inactive and its use should be reviewed");
      const former = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=1008006&display=Heart%20illness%20NOS`);
      assert.equal(param(former.body, 'result')?.valueBoolean, true, former.text);
      assert.equal(param(former.body, 'message'), undefined);
      const [issue] = (param(former.body, 'issues') as unknown as { resource: { issue: Array<{ severity: string; code: string; details: { coding: Array<{ code: string }>; text: string }; expression: string[] }> } }).resource.issue;
      assert.deepEqual([issue.severity, issue.code, issue.details.coding[0].code, issue.expression[0]], ['warning', 'invalid', 'display-comment', 'display']);
      assert.equal(
        issue.details.text,
        `'Heart illness NOS' is no longer considered a correct display for code '1008006' (status = inactive). The correct display is one of "Cardiac illness","Heart illness","Heart illness (disorder)".`,
      );
      const wrong = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=1008006&display=Heart%20ilness`);
      assert.equal(param(wrong.body, 'result')?.valueBoolean, false);
      assert.equal(
        param(wrong.body, 'message')?.valueString,
        "Wrong Display Name 'Heart ilness' for http://snomed.info/sct#1008006. Valid display is one of 3 choices: 'Heart illness' (en), 'Heart illness (disorder)' (en) or 'Cardiac illness' (en) (for the language(s) '--')",
      );
      const acceptable = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=1008006&display=Cardiac%20illness`);
      assert.equal(param(acceptable.body, 'result')?.valueBoolean, true);
      assert.equal(param(acceptable.body, 'display')?.valueString, 'Heart illness');
    });

    test('displays by dialect: displayLanguage or Accept-Language en-GB gives the en-GB preferred term; designations carry the dialect of a term preferred in one', async () => {
      const display = async (query: string, headers?: Record<string, string>) =>
        param((await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1012000${query}`, headers ? { headers } : {})).body, 'display')?.valueString;
      assert.equal(await display(''), 'Growth');
      assert.equal(await display('&displayLanguage=en-GB'), 'Tumour');
      assert.equal(await display('&displayLanguage=en-US'), 'Growth');
      assert.equal(await display('&displayLanguage=en'), 'Growth');
      assert.equal(await display('', { 'accept-language': 'en-GB' }), 'Tumour');
      const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1012000`);
      const designations = (lookup.body.parameter as Param[]).filter((p) => p.name === 'designation').map((p) => `${part(p, 'language')?.valueCode}|${part(p, 'value')?.valueString}`);
      assert.deepEqual(designations, ['en-US|Growth', 'en|Growth (disorder)', 'en-GB|Tumour']);
      const validated = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs`)}&system=${SCT}&code=1012000&displayLanguage=en-GB`);
      assert.equal(param(validated.body, 'display')?.valueString, 'Tumour');
      const expanded = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(`${SCT}?fhir_vs=isa/1012000`)}&displayLanguage=en-GB`);
      assert.equal(expanded.body.expansion.contains[0].display, 'Tumour');
    });

    test('$expand: designations are the FSN then the preferred terms; unclosed unless the include lists its concepts or refuses expressions; listed expressions are listed', async () => {
      const expand = async (include: object, extra: object[] = []) => {
        const body = { resourceType: 'Parameters', parameter: [{ name: 'valueSet', resource: { resourceType: 'ValueSet', url: 'http://example.org/vs/sct', status: 'active', compose: { include: [{ system: SCT, ...include }] } } }, ...extra] };
        const res = await server.fhir('POST', '/ValueSet/$expand', { body });
        assert.equal(res.status, 200, res.text);
        return res.body as { expansion: { total: number; extension?: Array<{ url: string; valueBoolean?: boolean; valueString?: string }>; contains: Array<{ code: string; display: string; designation?: Array<{ language: string; use: { code: string }; value: string }> }> } };
      };
      const withDesignations = await expand({ concept: [{ code: '1008006' }, { code: '1012000' }] }, [{ name: 'includeDesignations', valueBoolean: true }]);
      const shown = withDesignations.expansion.contains.map((c) => `${c.code}: ${(c.designation ?? []).map((d) => `${d.language}|${d.use.code}|${d.value}`).join(', ')}`);
      // Not the acceptable "Cardiac illness", nor the inactive "Heart illness NOS"; the text definition is no term.
      assert.deepEqual(shown, [
        '1008006: en|900000000000003001|Heart illness (disorder), en|900000000000013009|Heart illness, en|900000000000550004|An illness of a heart part.',
        '1012000: en|900000000000003001|Growth (disorder), en-US|900000000000013009|Growth, en-GB|900000000000013009|Tumour',
      ]);
      const unclosed = (body: Awaited<ReturnType<typeof expand>>) => (body.expansion.extension ?? []).filter((e) => /unclosed/.test(e.url)).map((e) => `${e.url.split('/').pop()}=${e.valueBoolean ?? e.valueString}`);
      assert.deepEqual(unclosed(withDesignations), []);
      assert.deepEqual(unclosed(await expand({ filter: [{ property: 'concept', op: 'is-a', value: '1002007' }] })), ['valueset-unclosed=true']);
      assert.deepEqual(unclosed(await expand({ filter: [{ property: 'concept', op: 'is-a', value: '1002007' }, { property: 'expressions', op: '=', value: 'false' }] })), []);
      const all = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(`${SCT}?fhir_vs`)}&count=0`);
      assert.deepEqual(unclosed(all.body), ['valueset-unclosed=true', `valueset-unclosed-reason=The code System '${SCT}' has a grammar and so has infinite members`]);
      // A listed expression is a member the expansion lists, after the concepts.
      const listed = await expand({ concept: [{ code: '1008006' }, { code: '1008006:1020003=1019009' }, { code: '1008006:1020003=1019099' }] });
      assert.equal(listed.expansion.total, 2);
      assert.deepEqual(listed.expansion.contains.map((c) => `${c.code} ${c.display}`), ['1008006 Heart illness', '1008006:1020003=1019009 1008006|Heart illness|:1020003|Side|=1019009|Left side|']);
    });

    test('$subsumes from the inferred polyhierarchy', async () => {
      const outcome = async (a: string, b: string) => param((await server.fhir('GET', `/CodeSystem/$subsumes?system=${SCT}&codeA=${a}&codeB=${b}`)).body, 'outcome')?.valueCode;
      assert.equal(await outcome('1002007', '1010008'), 'subsumes');
      assert.equal(await outcome('1010008', '1009003'), 'subsumed-by');
      assert.equal(await outcome('1008006', '1009003'), 'not-subsumed');
      assert.equal(await outcome('1012000', '1012000'), 'equivalent');
    });

    test('$expand: is-a (flat, though a concept has two parents in it), refset membership (active members), text filter', async () => {
      const vs = (filter: object) => ({ resourceType: 'Parameters', parameter: [{ name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: SCT, filter: [filter] }] } } }] });
      const isa = await server.fhir('POST', '/ValueSet/$expand', { body: vs({ property: 'concept', op: 'is-a', value: '1002007' }) });
      assert.equal(isa.status, 200, isa.text);
      assert.deepEqual(codes(isa.body), ['1002007', '1008006', '1009003', '1010008', '1012000']);
      assert.ok(isa.body.expansion.contains.every((c: { contains?: unknown }) => c.contains === undefined));
      const members = await server.fhir('POST', '/ValueSet/$expand', { body: vs({ property: 'concept', op: 'in', value: '1017006' }) });
      assert.deepEqual(codes(members.body), ['1008006', '1009003']);
      const withText = vs({ property: 'concept', op: 'descendent-of', value: '1002007' });
      withText.parameter.push({ name: 'filter', valueString: 'cardiac' } as never);
      const text = await server.fhir('POST', '/ValueSet/$expand', { body: withText });
      assert.deepEqual(codes(text.body), ['1008006']);
      // Only active descriptions are searched: "Heart illness NOS" is inactive.
      const inactiveText = vs({ property: 'concept', op: 'descendent-of', value: '1002007' });
      inactiveText.parameter.push({ name: 'filter', valueString: 'nos' } as never);
      assert.deepEqual(codes((await server.fhir('POST', '/ValueSet/$expand', { body: inactiveText })).body), []);
    });

    test('implicit value sets: ?fhir_vs, isa/<id>, refset, refset/<id>, under the system or an edition URI', async () => {
      const expand = (url: string) => server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(url)}`);
      assert.equal((await expand(`${SCT}?fhir_vs`)).body.expansion.total, 24);
      assert.deepEqual(codes((await expand(`${SCT}?fhir_vs=isa/1009003`)).body), ['1009003', '1010008']);
      assert.deepEqual(codes((await expand(`${SCT}?fhir_vs=refset`)).body), ['1017006', '900000000000526001']);
      assert.deepEqual(codes((await expand(`${SCT}?fhir_vs=refset/1017006`)).body), ['1008006', '1009003']);
      assert.deepEqual(codes((await expand('http://snomed.info/sct/9000001003?fhir_vs=isa/1009003')).body), ['1009003', '1010008']);
      const notRefset = await expand(`${SCT}?fhir_vs=refset/1008006`);
      assert.equal(notRefset.status, 400);
      assert.equal(ooText(notRefset.body), `ValueSet ${SCT}?fhir_vs=refset/1008006 not found`);
      const out = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs=refset/1017006`)}&system=${SCT}&code=1012000`);
      assert.equal(param(out.body, 'result')?.valueBoolean, false);
      assert.equal(param(out.body, 'message')?.valueString, "The provided code 'http://snomed.info/sct#1012000' was not found in the value set 'http://snomed.info/sct?fhir_vs=refset/1017006'");
    });

    test('ECL: constraint / expression filters and ?fhir_vs=ecl/: refinements with groups and cardinality, memberOf, MINUS, concrete values, term filters; a syntax error names the position', async () => {
      const ecl = async (expression: string, property = 'constraint') => {
        const body = { resourceType: 'Parameters', parameter: [{ name: 'valueSet', resource: { resourceType: 'ValueSet', status: 'active', compose: { include: [{ system: SCT, filter: [{ property, op: '=', value: expression }] }] } } }] };
        const res = await server.fhir('POST', '/ValueSet/$expand', { body });
        return res.status === 200 ? codes(res.body) : `${res.status} ${ooText(res.body)}`;
      };
      assert.deepEqual(await ecl('<< 1002007 |Illness| : 1007001 |Site| = 1004008 |Heart part|'), ['1008006', '1010008']);
      assert.deepEqual(await ecl('<< 1002007 : [2..2] { 1007001 = << 1003002 }'), ['1010008']);
      assert.deepEqual(await ecl('<< 1002007 : [0..0] 1020003 |Side| = *'), ['1002007', '1008006', '1010008', '1012000']);
      assert.deepEqual(await ecl('^ 1017006', 'expression'), ['1008006', '1009003']);
      assert.deepEqual(await ecl('<< 1002007 MINUS ^ 1017006'), ['1002007', '1010008', '1012000']);
      assert.deepEqual(await ecl('* : 1015003 > #2'), ['1016002']);
      assert.deepEqual(await ecl('<< 1002007 {{ term = "cardiac" }}'), ['1008006']);
      // Dialects: "Tumour" is preferred in en-GB and only acceptable in en-US.
      assert.deepEqual(await ecl('< 1002007 {{ D term = "tumour", dialect = en-gb (prefer) }}'), ['1012000']);
      assert.deepEqual(await ecl('< 1002007 {{ D term = "tumour", dialect = en-us (prefer) }}'), []);
      assert.deepEqual(await ecl('< 1002007 {{ D term = "tumour", dialect = en-us (accept) }}'), ['1012000']);
      // Description ids (read from the acceptability table on first need).
      assert.deepEqual(await ecl('< 1002007 {{ D id = 5048013 }}'), ['1012000']);
      assert.deepEqual(await ecl('< 1002007 {{ D id != 5048013, term = "tumour" }}'), []);
      assert.deepEqual(await ecl('< 1004008 : R 1007001 = *'), []);
      assert.deepEqual(await ecl('* : R 1007001 = <<1008006'), ['1004008', '1005009']);
      assert.equal(await ecl('<< 1002007 :'), "400 Invalid ECL '<< 1002007 :': expected a concept reference, '(' or '*' at 12");
      const implicit = await server.fhir('GET', `/ValueSet/$expand?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/<< 1009003`)}`);
      assert.deepEqual(codes(implicit.body), ['1009003', '1010008']);
      const member = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/^ 1017006`)}&system=${SCT}&code=1009003`);
      assert.equal(param(member.body, 'result')?.valueBoolean, true);
      assert.equal(param(member.body, 'display')?.valueString, 'Lung illness');
      // An inactive concept a filter admits is a member, its status not reported; the whole system reports it.
      const viaFilter = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs=ecl/^ 900000000000526001`)}&system=${SCT}&code=1011007`);
      assert.deepEqual([param(viaFilter.body, 'result')?.valueBoolean, param(viaFilter.body, 'inactive'), param(viaFilter.body, 'issues')], [true, undefined, undefined]);
      const whole = await server.fhir('GET', `/ValueSet/$validate-code?url=${encodeURIComponent(`${SCT}?fhir_vs`)}&system=${SCT}&code=1011007`);
      assert.equal(param(whole.body, 'inactive')?.valueBoolean, true);
      assert.equal(param(whole.body, 'message')?.valueString, "The concept '1011007' has a status of inactive and its use should be reviewed");
    });

    test('postcoordinated expressions: $lookup and $validate-code of an expression; value sets admit it by listing, hierarchy or ECL unless expressions = false', async () => {
      const expr = '1008006 |Heart illness| : 1020003 |Side| = 1019009';
      const lookup = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=${encodeURIComponent(expr)}`);
      assert.equal(lookup.status, 200, lookup.text);
      assert.equal(param(lookup.body, 'display')?.valueString, '1008006|Heart illness|:1020003|Side|=1019009|Left side|');
      // Placed by its focus concept (its parents and children, effective time); its attributes are
      // the refinement's and the focus concept's others; its one designation is its display (en-US).
      assert.deepEqual(properties(lookup.body), [
        'parent=1002007 (Illness)',
        'child=1010008 (Heart and lung illness)',
        'inactive=false',
        'effectiveTime=2024-01-31',
        '1020003 [Side]=1019009 (Left side)',
        '1007001 [Site]=1004008 (Heart part)',
      ]);
      const designations = (lookup.body.parameter as Param[]).filter((p) => p.name === 'designation').map((p) => `${part(p, 'language')?.valueCode}|${part(p, 'value')?.valueString}`);
      assert.deepEqual(designations, ['en-US|1008006|Heart illness|:1020003|Side|=1019009|Left side|']);
      type Issues = { resource: { issue: Array<{ severity: string; code: string; details: { coding: Array<{ code: string }>; text: string } }> } };
      const issuesOf = (body: { parameter?: Param[] }) => ((param(body, 'issues') as unknown as Issues | undefined)?.resource.issue ?? []).map((i) => `${i.severity} ${i.code} ${i.details.coding[0].code}: ${i.details.text}`);
      // CodeSystem/$validate-code: valid, with the note that the concept model was not checked.
      const valid = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=${encodeURIComponent('1008006:1020003=1019009')}`);
      assert.equal(param(valid.body, 'result')?.valueBoolean, true);
      assert.equal(param(valid.body, 'display')?.valueString, '1008006|Heart illness|:1020003|Side|=1019009|Left side|');
      assert.equal(param(valid.body, 'message'), undefined);
      assert.deepEqual(issuesOf(valid.body), [
        'information informational process-note: The expression is grammatically correct and the concepts are valid, but the expression has not been checked against the SNOMED CT concept model (MRCM)',
      ]);
      // Unknown: the edition is named (the fixture's module depends on the International Edition's), and why.
      const unknown = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=${encodeURIComponent('1008006:1020003=1019099')}`);
      assert.equal(param(unknown.body, 'result')?.valueBoolean, false);
      const unknownText = `Unknown code '1008006:1020003=1019099' in the CodeSystem '${SCT}' version '${V1}' (International Edition)`;
      assert.equal(param(unknown.body, 'message')?.valueString, unknownText);
      assert.deepEqual(issuesOf(unknown.body), [`error code-invalid invalid-code: ${unknownText}`, 'information code-invalid invalid-code: Not a valid expression: Concept 1019099 not found']);
      // A plain unknown concept is named with the edition too, with no note.
      const plain = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=1019099`);
      assert.deepEqual(issuesOf(plain.body), [`error code-invalid invalid-code: Unknown code '1019099' in the CodeSystem '${SCT}' version '${V1}' (International Edition)`]);
      const inactiveFocus = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=${encodeURIComponent('1011007:1020003=1019009')}`);
      assert.equal(param(inactiveFocus.body, 'result')?.valueBoolean, false);

      const member = async (include: object, code = '1008006:1020003=1019009') => {
        const body = { resourceType: 'Parameters', parameter: [
          { name: 'valueSet', resource: { resourceType: 'ValueSet', url: 'http://example.org/vs/pc', status: 'active', compose: { include: [{ system: SCT, ...include }] } } },
          { name: 'system', valueUri: SCT },
          { name: 'code', valueCode: code },
        ] };
        const res = await server.fhir('POST', '/ValueSet/$validate-code', { body });
        return param(res.body, 'result')?.valueBoolean;
      };
      assert.equal(await member({ filter: [{ property: 'concept', op: 'is-a', value: '1002007' }] }), true);
      assert.equal(await member({ filter: [{ property: 'concept', op: 'is-a', value: '1002007' }, { property: 'expressions', op: '=', value: 'false' }] }), false);
      assert.equal(await member({ filter: [{ property: 'concept', op: 'is-a', value: '1002007' }, { property: 'expressions', op: '=', value: 'true' }] }), true);
      assert.equal(await member({ filter: [{ property: 'concept', op: 'is-a', value: '1009003' }] }), false);
      assert.equal(await member({ filter: [{ property: 'constraint', op: '=', value: '< 1002007 : 1020003 = 1019009, 1007001 = 1004008' }] }), true);
      assert.equal(await member({ filter: [{ property: 'constraint', op: '=', value: '^ 1017006' }] }), false);
      assert.equal(await member({ concept: [{ code: '1008006 : 1020003 = 1019009' }] }), true);
      assert.equal(await member({ concept: [{ code: '1008006' }] }), false);
      // The real concepts of an include with `expressions = false` are unaffected.
      assert.equal(await member({ filter: [{ property: 'concept', op: 'is-a', value: '1002007' }, { property: 'expressions', op: '=', value: 'false' }] }, '1008006'), true);
    });

    test('two editions side by side: the newest answers without a version; a version URI or an edition URI selects', async () => {
      // The next edition: a later ModuleDependency source time and one term changed.
      const next = join(dir, 'next');
      cpSync(FIXTURE, next, { recursive: true });
      const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
      for (const file of walk(next)) {
        if (/ModuleDependency/.test(file)) writeFileSync(file, readFileSync(file, 'utf8').replace(/\t20240131\t20230901/, '\t20250131\t20230901'));
        if (/sct2_Description/.test(file)) writeFileSync(file, readFileSync(file, 'utf8').replace('\tHeart illness\t', '\tHeart sickness\t'));
      }
      await importRf2(next, server.app, { out: quiet() });
      const display = async (query: string) => {
        const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006${query}`);
        return `${param(res.body, 'version')?.valueString} ${param(res.body, 'display')?.valueString}`;
      };
      assert.equal(await display(''), `${V2} Heart sickness`);
      assert.equal(await display(`&version=${V1}`), `${V1} Heart illness`);
      assert.equal(await display('&version=http://snomed.info/sct/9000001003'), `${V2} Heart sickness`);
      const pinned = await server.fhir('GET', `/CodeSystem/$validate-code?url=${SCT}&code=1008006&display=Heart%20illness&version=${encodeURIComponent(V1)}`);
      assert.equal(param(pinned.body, 'result')?.valueBoolean, true);
      const unknown = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006&version=http://snomed.info/sct/9000001003/version/20990101`);
      assert.equal(unknown.status, 404);
    });

    test('a Full release is reduced to its snapshot (the newest row of each id)', async () => {
      const full = join(dir, 'full');
      cpSync(FIXTURE, full, { recursive: true });
      const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
      for (const file of walk(full)) {
        let text = readFileSync(file, 'utf8');
        if (/ModuleDependency/.test(file)) text = text.replace(/\t20240131\t20230901/, '\t20270131\t20230901');
        // An older version of the "Heart illness" description, and of the concept (inactive then).
        if (/sct2_Description/.test(file)) text = text.replace(/^(\d+)\t20240131\t1(\t\d+\t1008006\ten\t900000000000013009\t)Heart illness\t/m, '$1\t20200131\t1$2Heart trouble\t900000000000448009\r\n$&');
        if (/sct2_Concept/.test(file)) text = text.replace(/^1008006\t20240131\t1\t/m, '1008006\t20200131\t0\t9000001003\t900000000000074008\r\n$&');
        rmSync(file);
        writeFileSync(file.replace(/Snapshot(?=[^/]*$)/, 'Full'), text);
      }
      await importRf2(full, server.app, { out: quiet() });
      const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1008006&version=${encodeURIComponent('http://snomed.info/sct/9000001003/version/20270131')}`);
      assert.equal(res.status, 200, res.text);
      assert.equal(param(res.body, 'display')?.valueString, 'Heart illness');
      assert.ok(!res.text.includes('Heart trouble'), res.text);
      assert.ok(properties(res.body).includes('inactive=false'));
      // A dialect filter as the first description filter of a fresh edition resolves the dialect.
      const ecl = encodeURIComponent('http://snomed.info/sct/9000001003/version/20270131?fhir_vs=ecl/< 1002007 {{ D term = "tumour", dialect = en-gb (prefer) }}');
      const dialect = await server.fhir('GET', `/ValueSet/$expand?url=${ecl}`);
      assert.deepEqual(codes(dialect.body), ['1012000']);
    });

    test('an RF2 release (a zip) into a running server: lattice import --format rf2 --url; only admins may', async () => {
      const release = join(dir, 'release');
      cpSync(FIXTURE, release, { recursive: true });
      const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : [join(d, e.name)]));
      for (const file of walk(release)) {
        if (/ModuleDependency/.test(file)) writeFileSync(file, readFileSync(file, 'utf8').replace(/\t20240131\t20230901/, '\t20260131\t20230901'));
      }
      const zip = join(dir, 'release.zip');
      zipFolder(release, zip, release);
      const run = await cli(['--format', 'rf2', zip, '--unpublished', '--url', server.baseUrl, '--token', server.adminToken as string]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /imported 1 resources \(1 CodeSystems, 0 ValueSets, 24 concepts; 0 skipped\)/);
      assert.match(run.stderr, /release\.zip \[#+\] 100% .* bytes sent/);
      const v3 = 'http://snomed.info/xsct/9000001003/version/20260131';
      const res = await server.fhir('GET', `/CodeSystem/$lookup?system=${SCT}&code=1012000&version=${encodeURIComponent(v3)}&displayLanguage=en-GB`);
      assert.equal(res.status, 200, res.text);
      assert.equal(param(res.body, 'display')?.valueString, 'Tumour');
      // A plain member may not import; a body that is no RF2 upload is a 400.
      const member = await cli(['--format', 'rf2', zip, '--url', server.baseUrl, '--token', server.member?.token as string]);
      assert.equal(member.code, 1);
      assert.match(member.stderr, /The server refused the import \(403\): Forbidden/);
      const bad = await server.request('POST', '/admin/terminology/import?format=rf2', { token: server.adminToken, raw: '12 notes.txt\nhello world!', contentType: 'application/octet-stream' });
      assert.equal(bad.status, 400, bad.text);
      assert.equal(ooText(bad.body), 'Not an RF2 upload: a file header is malformed or names a file that is not an RF2 Snapshot file');
    });
  });
}
