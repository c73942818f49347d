import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { describe, test } from 'node:test';
import { pack } from 'tar-stream';
import type { StructureDefinition } from '@medplum/fhirtypes';
import { projectRoot } from '../src/paths.js';
import { drivers, loginAs, sharedStorage, startServer, type TestMember } from './harness.js';
import { latticeArgs } from './support/cli.js';

/** `lattice import --format package` (docs/profiles.md#packages), with packages built here. */

const EX = 'http://example.org/fhir/';

/** Writes a FHIR NPM package as a .tgz (files under `package/`). */
async function tgz(path: string, files: Record<string, unknown>): Promise<void> {
  const archive = pack();
  for (const [name, content] of Object.entries(files)) archive.entry({ name: `package/${name}` }, typeof content === 'string' ? content : JSON.stringify(content));
  archive.finalize();
  await pipeline(archive, createGzip(), createWriteStream(path));
}

/** Writes the same layout as a folder. */
function folder(path: string, files: Record<string, unknown>): void {
  for (const [name, content] of Object.entries(files)) {
    const file = join(path, 'package', name);
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  }
}

const sd = (id: string, base: string, version: string, element: object[], type = 'Patient'): StructureDefinition =>
  ({
    resourceType: 'StructureDefinition',
    id,
    url: `${EX}StructureDefinition/${id}`,
    version,
    name: id.replace(/-/g, ''),
    status: 'active',
    kind: type === 'Extension' ? 'complex-type' : 'resource',
    abstract: false,
    type,
    baseDefinition: base,
    derivation: 'constraint',
    differential: { element: [{ id: type, path: type }, ...element] },
  }) as StructureDefinition;

const COLOUR = `${EX}StructureDefinition/favourite-colour`;

const basePackage = {
  'package.json': { name: 'example.fhir.base', version: '0.1.0', dependencies: { 'hl7.fhir.r4.core': '4.0.1' } },
  '.index.json': { 'index-version': 1, files: [{ filename: 'StructureDefinition-clinic-base.json', resourceType: 'StructureDefinition', id: 'clinic-base', url: `${EX}StructureDefinition/clinic-base` }] },
  'StructureDefinition-clinic-base.json': sd('clinic-base', 'http://hl7.org/fhir/StructureDefinition/Patient', '0.1.0', [{ id: 'Patient.birthDate', path: 'Patient.birthDate', min: 1 }]),
};

const clinicPackage = (version: string, nameMax: string) => ({
  'package.json': {
    name: 'example.fhir.clinic',
    version,
    dependencies: { 'hl7.fhir.r4.core': '4.0.1', 'example.fhir.base': '0.1.0', 'example.fhir.missing': '2.0.0' },
  },
  'StructureDefinition-clinic-patient.json': sd('clinic-patient', `${EX}StructureDefinition/clinic-base|0.1.0`, version, [
    { id: 'Patient.extension:colour', path: 'Patient.extension', sliceName: 'colour', max: '1', type: [{ code: 'Extension', profile: [COLOUR] }] },
    { id: 'Patient.name', path: 'Patient.name', min: 1, max: nameMax },
  ]),
  'StructureDefinition-favourite-colour.json': sd('favourite-colour', 'http://hl7.org/fhir/StructureDefinition/Extension', version, [
    { id: 'Extension', path: 'Extension', short: 'Favourite colour' },
    { id: 'Extension.url', path: 'Extension.url', fixedUri: COLOUR },
    { id: 'Extension.value[x]', path: 'Extension.value[x]', type: [{ code: 'code' }] },
  ], 'Extension'),
  'SearchParameter-favourite-colour.json': {
    resourceType: 'SearchParameter',
    id: 'favourite-colour',
    url: `${EX}SearchParameter/favourite-colour`,
    version,
    name: 'favourite-colour',
    status: 'active',
    description: 'The favourite colour of the patient',
    code: 'favourite-colour',
    base: ['Patient'],
    type: 'token',
    expression: `Patient.extension.where(url = '${COLOUR}').value`,
  },
  'CodeSystem-colours.json': {
    resourceType: 'CodeSystem',
    id: 'colours',
    url: `${EX}CodeSystem/colours`,
    version,
    status: 'active',
    content: 'complete',
    concept: [{ code: 'blue', display: 'Blue' }, { code: 'red', display: 'Red' }],
  },
  'example/Patient-example.json': { resourceType: 'Patient', id: 'example', birthDate: '2000-01-01' },
  'other/spec.internals': 'not a resource',
});

const run = (env: NodeJS.ProcessEnv, ...args: string[]) => spawnSync(process.execPath, latticeArgs('import', '--format', 'package', ...args), { cwd: projectRoot, env, encoding: 'utf8' });
const card = (body: StructureDefinition, id: string) => {
  const e = body.snapshot?.element.find((x) => x.id === id);
  return e ? `${e.min}..${e.max}` : undefined;
};

for (const driver of drivers) {
  describe(`lattice import --format package (${driver})`, () => {
    test('loads a package and its local dependency; its profile has a snapshot, its SearchParameter searches (stored patients re-indexed), versions stay apart', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-package-'));
      try {
        const deps = join(dir, 'deps');
        folder(join(deps, 'example.fhir.base#0.1.0'), basePackage);
        const v1 = join(dir, 'example.fhir.clinic-1.0.0.tgz');
        const v2 = join(dir, 'example.fhir.clinic-1.1.0.tgz');
        await tgz(v1, clinicPackage('1.0.0', '*'));
        await tgz(v2, clinicPackage('1.1.0', '1'));
        const { storage, env } = await sharedStorage(driver, dir);
        // A patient stored before the package: re-indexed for its SearchParameter at the next start.
        const before = await startServer(driver, storage);
        const early = await before.fhir('POST', '/Patient', { body: { resourceType: 'Patient', extension: [{ url: COLOUR, valueCode: 'blue' }] } });
        assert.equal(early.status, 201, early.text);
        await before.stop();

        const first = run(env, v1, '--package-dir', deps);
        assert.equal(first.status, 0, first.stderr);
        const lines = first.stdout.trim().split('\n');
        assert.deepEqual(lines.map((l) => l.replace(/ in [\d.]+ s$/, '')), [
          'package example.fhir.base#0.1.0: dependencies hl7.fhir.r4.core#4.0.1 (built in)',
          'package example.fhir.base#0.1.0: imported 1 resources (0 CodeSystems, 0 ValueSets, 1 other definitions)',
          `package example.fhir.clinic#1.0.0: dependencies hl7.fhir.r4.core#4.0.1 (built in), example.fhir.base#0.1.0 (loaded from ${join(deps, 'example.fhir.base#0.1.0')}), example.fhir.missing#2.0.0 (missing)`,
          'package example.fhir.clinic#1.0.0: imported 4 resources (1 CodeSystems, 0 ValueSets, 3 other definitions)',
        ]);
        assert.match(first.stderr, /warning: dependency example\.fhir\.missing#2\.0\.0 of example\.fhir\.clinic#1\.0\.0 not found \(looked for example\.fhir\.missing#2\.0\.0 and example\.fhir\.missing-2\.0\.0\.tgz in /);
        const second = run(env, v2, '--package-dir', deps);
        assert.equal(second.status, 0, second.stderr);
        assert.match(second.stdout, /package example\.fhir\.clinic#1\.1\.0: imported 4 resources/);

        const server = await startServer(driver, storage);
        try {
          const url = `${EX}StructureDefinition/clinic-patient`;
          const latest = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent(url)}`);
          assert.equal(latest.status, 200, latest.text);
          assert.equal(latest.body.version, '1.1.0');
          assert.equal(card(latest.body, 'Patient.name'), '1..1');
          assert.equal(card(latest.body, 'Patient.birthDate'), '1..1', 'from the dependency\'s profile');
          const colour = latest.body.snapshot.element.find((e: { id: string }) => e.id === 'Patient.extension:colour');
          assert.equal(colour.short, 'Favourite colour');
          const older = await server.fhir('GET', `/StructureDefinition/$snapshot?url=${encodeURIComponent(`${url}|1.0.0`)}`);
          assert.equal(older.status, 200, older.text);
          assert.equal(card(older.body, 'Patient.name'), '1..*');
          const examples = await server.fhir('GET', '/Patient?_id=example', { token: server.adminToken });
          assert.equal(examples.body.total, 0, 'clinical examples are not loaded');

          // The package's profile validates: its own constraint (name 1..1 in 1.1.0), its
          // dependency's (birthDate 1..1) and its extension slice (colour at most once).
          const validate = (resource: object) =>
            server.fhir('POST', '/Patient/$validate', {
              body: { resourceType: 'Parameters', parameter: [{ name: 'resource', resource }, { name: 'profile', valueUri: url }] },
            });
          const conforming = await validate({ resourceType: 'Patient', name: [{ family: 'Okafor' }], birthDate: '1980-02-03', extension: [{ url: COLOUR, valueCode: 'blue' }] });
          assert.equal(conforming.status, 200, conforming.text);
          assert.deepEqual(
            conforming.body.issue.filter((i: { severity: string }) => i.severity === 'error'),
            [],
            conforming.text,
          );
          const failing = await validate({
            resourceType: 'Patient',
            name: [{ family: 'Okafor' }, { family: 'Other' }],
            extension: [{ url: COLOUR, valueCode: 'blue' }, { url: COLOUR, valueCode: 'red' }],
          });
          assert.equal(failing.status, 200, failing.text);
          const errors = failing.body.issue.filter((i: { severity: string }) => i.severity === 'error').map((i: { expression?: string[] }) => i.expression?.[0]);
          assert.ok(errors.includes('Patient.birthDate'), `birthDate (the dependency's constraint): ${failing.text}`);
          assert.ok(errors.some((e: string | undefined) => e?.startsWith('Patient.name')), `name 1..1: ${failing.text}`);
          assert.ok(errors.some((e: string | undefined) => e?.startsWith('Patient.extension')), `colour at most once: ${failing.text}`);

          // The member of the first start, logged in again: its project holds the early patient.
          const member = before.member as TestMember;
          const token = await loginAs(server, member.email, member.password, before.projectId);
          const created = await server.fhir('POST', '/Patient', { token, body: { resourceType: 'Patient', extension: [{ url: COLOUR, valueCode: 'blue' }] } });
          assert.equal(created.status, 201, created.text);
          const blueIds = async () => {
            const blue = await server.fhir('GET', '/Patient?favourite-colour=blue&_sort=_lastUpdated', { token });
            assert.equal(blue.status, 200, blue.text);
            return (blue.body.entry ?? []).map((e: { resource: { id: string } }) => e.resource.id) as string[];
          };
          assert.ok((await blueIds()).includes(created.body.id), 'a patient written now is indexed for it');
          // The re-index runs in the background after the start: wait until it reached the early patient.
          for (let i = 0; i < 300 && !(await blueIds()).includes(early.body.id); i++) await new Promise((r) => setTimeout(r, 100));
          assert.deepEqual(await blueIds(), [early.body.id, created.body.id]);
          const red = await server.fhir('GET', '/Patient?favourite-colour=red', { token });
          assert.equal(red.status, 200, red.text);
          assert.equal(red.body.entry, undefined);
        } finally {
          await server.stop();
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('a package with a file that is not JSON: exit 1 naming the file; not an archive: exit 1', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'lattice-package-'));
      try {
        const bad = join(dir, 'bad.tgz');
        await tgz(bad, { 'package.json': { name: 'example.bad', version: '1.0.0' }, 'StructureDefinition-broken.json': '{"resourceType": "StructureDefinition", ' });
        const { env } = await sharedStorage(driver, dir);
        const out = run(env, bad);
        assert.equal(out.status, 1, out.stdout);
        assert.match(out.stderr, new RegExp(`^${bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: package/StructureDefinition-broken\\.json is not JSON \\(`, 'm'));
        const notArchive = join(dir, 'plain.tgz');
        writeFileSync(notArchive, 'hello');
        const out2 = run(env, notArchive);
        assert.equal(out2.status, 1);
        assert.match(out2.stderr, /plain\.tgz: not a gzip-compressed tar archive/);
        const invalid = join(dir, 'invalid.tgz');
        await tgz(invalid, {
          'package.json': { name: 'example.invalid', version: '1.0.0' },
          'SearchParameter-odd.json': { resourceType: 'SearchParameter', id: 'odd', url: `${EX}SearchParameter/odd`, name: 'odd', status: 'active', description: 'x', code: 'odd', shoeSize: 42, base: ['Patient'], type: 'token' },
        });
        const out3 = run(env, invalid);
        assert.equal(out3.status, 1, out3.stdout);
        assert.match(out3.stderr, /invalid\.tgz: package\/SearchParameter-odd\.json: .*shoeSize/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });
}
