import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import ts from 'typescript';
import { projectRoot } from '../src/paths.js';

/**
 * The layering of src/ (README "Architecture"), checked over the real import graph:
 * arrows point down only, no cycles, Fastify only in the HTTP adapter, contracts in src/core
 * import nothing but contracts, only the change feed sends NOTIFY, SQL on the `resource` table
 * stays in src/storage, and every `docs/…#anchor` a comment cites exists.
 */

const SRC = join(projectRoot, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Module (path relative to the project, e.g. `src/core/auth.ts`) → what it imports (modules, or package names). */
function importGraph(): Map<string, { modules: string[]; packages: string[] }> {
  const graph = new Map<string, { modules: string[]; packages: string[] }>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const modules: string[] = [];
    const packages: string[] = [];
    for (const { fileName } of info.importedFiles) {
      if (fileName.startsWith('.')) {
        const target = resolve(dirname(file), fileName).replace(/\.js$/, '.ts');
        if (target.endsWith('.ts')) modules.push(relative(projectRoot, target));
      } else {
        packages.push(fileName);
      }
    }
    graph.set(relative(projectRoot, file), { modules, packages });
  }
  return graph;
}

const graph = importGraph();
const folderOf = (module: string) => module.split('/').slice(0, 2).join('/');

describe('architecture', () => {
  test('the graph is complete (every relative import resolves to a file)', () => {
    const missing = [...graph].flatMap(([from, { modules }]) => modules.filter((m) => !existsSync(join(projectRoot, m))).map((m) => `${from} → ${m}`));
    assert.deepEqual(missing, []);
    assert.ok(graph.size > 100, `only ${graph.size} modules found`);
  });

  test('Fastify is imported only by src/http', () => {
    const offenders = [...graph].filter(([from, { packages }]) => packages.some((p) => p === 'fastify' || p.startsWith('@fastify/')) && !from.startsWith('src/http/'));
    assert.deepEqual(offenders.map(([from]) => from), []);
  });

  test('src/core holds contracts: it imports only src/core (and the configuration type)', () => {
    const offenders = [...graph]
      .filter(([from]) => from.startsWith('src/core/'))
      .flatMap(([from, { modules }]) => modules.filter((m) => !m.startsWith('src/core/') && m !== 'src/config.ts').map((m) => `${from} → ${m}`));
    assert.deepEqual(offenders, []);
  });

  test('nothing but main.ts imports the app wiring; nothing imports main.ts', () => {
    const offenders = [...graph].flatMap(([from, { modules }]) =>
      modules.filter((m) => m === 'src/main.ts' || (m === 'src/app.ts' && from !== 'src/main.ts')).map((m) => `${from} → ${m}`),
    );
    assert.deepEqual(offenders, []);
  });

  test('features import contracts, not the HTTP adapter or each other\'s wiring', () => {
    const offenders = [...graph]
      .filter(([from]) => !from.startsWith('src/http/') && from !== 'src/app.ts')
      .flatMap(([from, { modules }]) =>
        modules.filter((m) => m.startsWith('src/http/') || (m.endsWith('/install.ts') && folderOf(m) !== folderOf(from))).map((m) => `${from} → ${m}`),
      );
    assert.deepEqual(offenders, []);
  });

  test('src/terminology: handlers over rules over stores over providers over the leaves (src/terminology/README.md)', () => {
    const T = 'src/terminology/';
    const LEAVES = ['types.ts', 'messages.ts', 'issues.ts', 'versions.ts', 'limits.ts'].map((f) => T + f);
    /** Folder of a terminology module: its first folder under src/terminology, or `leaf`/`wiring` at the top. */
    const layer = (m: string) => {
      const rest = m.slice(T.length);
      if (!rest.includes('/')) return LEAVES.includes(m) ? 'leaf' : 'wiring';
      return rest.split('/')[0];
    };
    const allowed: Record<string, string[]> = {
      wiring: ['wiring', 'operations', 'engine', 'store', 'providers', 'leaf'],
      operations: ['operations', 'engine', 'store', 'providers', 'leaf'],
      engine: ['engine', 'store', 'providers', 'leaf'],
      store: ['store', 'providers', 'leaf'],
      providers: ['providers', 'leaf'],
      leaf: ['leaf'],
    };
    const offenders = [...graph]
      .filter(([from]) => from.startsWith(T))
      .flatMap(([from, { modules }]) =>
        modules.filter((m) => m.startsWith(T) && !allowed[layer(from)].includes(layer(m))).map((m) => `${from} → ${m}`),
      );
    assert.deepEqual(offenders, []);
    // The rules and handlers reach a code system only through the provider contract and its
    // selection: never through one provider's implementation.
    const bypass = [...graph]
      .filter(([from]) => from.startsWith(`${T}engine/`) || from.startsWith(`${T}operations/`))
      .flatMap(([from, { modules }]) => modules.filter((m) => /-provider\.ts$|\/(index|sql)-filters\.ts$|\/code-system-index\.ts$/.test(m)).map((m) => `${from} → ${m}`));
    assert.deepEqual(bypass, []);
    const top = readdirSync(join(projectRoot, T)).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    assert.ok(top.length <= 10, `src/terminology has ${top.length} files at its top level: ${top.join(', ')}`);
  });

  test('src/cluster only forks and watches processes: it imports nothing of the application, and only the command entries (main.ts, launch.ts) import it (src/cluster/README.md)', () => {
    const below = [...graph]
      .filter(([from]) => from.startsWith('src/cluster/'))
      .flatMap(([from, { modules }]) => modules.filter((m) => !m.startsWith('src/cluster/')).map((m) => `${from} → ${m}`));
    assert.deepEqual(below, []);
    const above = [...graph]
      .filter(([from]) => !from.startsWith('src/cluster/') && from !== 'src/main.ts' && from !== 'src/launch.ts')
      .flatMap(([from, { modules }]) => modules.filter((m) => m.startsWith('src/cluster/')).map((m) => `${from} → ${m}`));
    assert.deepEqual(above, []);
  });

  test('src/binary stands on the contracts: it imports src/core, src/fhir and itself; others reach it through src/core/binary.ts', () => {
    const floor = ['src/binary/', 'src/core/', 'src/fhir/'];
    const below = [...graph]
      .filter(([from]) => from.startsWith('src/binary/'))
      .flatMap(([from, { modules }]) => modules.filter((m) => m !== 'src/config.ts' && !floor.some((f) => m.startsWith(f))).map((m) => `${from} → ${m}`));
    assert.deepEqual(below, []);
    const above = [...graph]
      .filter(([from]) => !from.startsWith('src/binary/') && from !== 'src/app.ts')
      .flatMap(([from, { modules }]) => modules.filter((m) => m.startsWith('src/binary/')).map((m) => `${from} → ${m}`));
    assert.deepEqual(above, []);
  });

  test('src/profiles stands beside src/fhir/validation: it imports src/core, src/fhir, the shipped operation definitions and itself; app.ts wires it, the CLI loads packages with it (src/profiles/README.md)', () => {
    const P = 'src/profiles/';
    const allowed = (m: string) => m.startsWith(P) || m.startsWith('src/core/') || m.startsWith('src/fhir/') || m === 'src/operations/definitions/index.ts' || m === 'src/config.ts';
    const down = [...graph]
      .filter(([from]) => from.startsWith(P))
      .flatMap(([from, { modules }]) => modules.filter((m) => !allowed(m)).map((m) => `${from} → ${m}`));
    assert.deepEqual(down, []);
    // src/rest and the rest reach profile validation through the ProfileValidator contract (src/core/validation.ts).
    const up = [...graph]
      .filter(([from]) => !from.startsWith(P) && from !== 'src/app.ts' && from !== 'src/main.ts' && !from.startsWith('src/cli/'))
      .flatMap(([from, { modules }]) => modules.filter((m) => m.startsWith(P)).map((m) => `${from} → ${m}`));
    assert.deepEqual(up, []);
  });

  test('src/subscriptions stands on the contracts: core, fhir, the change feed; only app.ts wires it (src/subscriptions/README.md)', () => {
    const S = 'src/subscriptions/';
    const allowed = (m: string) => m.startsWith(S) || m.startsWith('src/core/') || m.startsWith('src/fhir/') || m === 'src/storage/change-feed.ts' || m === 'src/config.ts';
    const down = [...graph]
      .filter(([from]) => from.startsWith(S))
      .flatMap(([from, { modules }]) => modules.filter((m) => !allowed(m)).map((m) => `${from} → ${m}`));
    assert.deepEqual(down, []);
    const up = [...graph]
      .filter(([from]) => !from.startsWith(S) && from !== 'src/app.ts')
      .flatMap(([from, { modules }]) => modules.filter((m) => m.startsWith(S)).map((m) => `${from} → ${m}`));
    assert.deepEqual(up, []);
  });

  test('src/storage/bulk-prepare (a bulk load\'s worker threads) stands on core, fhir, the search index and the COPY format; only the bulk load and the entry module reach it (src/storage/bulk-prepare/README.md)', () => {
    const B = 'src/storage/bulk-prepare/';
    const allowed = (m: string) =>
      m.startsWith(B) || m.startsWith('src/core/') || m.startsWith('src/fhir/') || m.startsWith('src/storage/search/') || m === 'src/storage/copy-load.ts';
    const down = [...graph]
      .filter(([from]) => from.startsWith(B))
      .flatMap(([from, { modules }]) => modules.filter((m) => !allowed(m)).map((m) => `${from} → ${m}`));
    assert.deepEqual(down, []);
    const up = [...graph]
      .filter(([from]) => !from.startsWith(B) && from !== 'src/storage/bulk-load.ts' && from !== 'src/main.ts')
      .flatMap(([from, { modules }]) => modules.filter((m) => m.startsWith(B)).map((m) => `${from} → ${m}`));
    assert.deepEqual(up, []);
  });

  test('no import cycles', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (m: string) => {
      state.set(m, 'open');
      stack.push(m);
      for (const next of graph.get(m)?.modules ?? []) {
        if (state.get(next) === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next].join(' → '));
        else if (!state.has(next)) visit(next);
      }
      stack.pop();
      state.set(m, 'done');
    };
    for (const m of graph.keys()) if (!state.has(m)) visit(m);
    assert.deepEqual(cycles, []);
  });

  test('src/rest reaches storage only through the contracts in src/core', () => {
    const offenders = [...graph]
      .filter(([from]) => from.startsWith('src/rest/'))
      .flatMap(([from, { modules }]) => modules.filter((m) => m.startsWith('src/storage/')).map((m) => `${from} → ${m}`));
    assert.deepEqual(offenders, []);
  });

  test('src/export (Bulk Data jobs) stands on the contracts: core, fhir, the change feed and the tenancy constants; its SQL is in job-store.ts', () => {
    const allowed = (m: string) =>
      m.startsWith('src/core/') || m.startsWith('src/fhir/') || m.startsWith('src/export/') || ['src/config.ts', 'src/storage/change-feed.ts', 'src/storage/scope.ts'].includes(m);
    const offenders = [...graph]
      .filter(([from]) => from.startsWith('src/export/'))
      .flatMap(([from, { modules }]) => modules.filter((m) => !allowed(m)).map((m) => `${from} → ${m}`));
    assert.deepEqual(offenders, []);
    const sql = sourceFiles(join(SRC, 'export'))
      .map((file) => relative(projectRoot, file))
      .filter((file) => file !== 'src/export/job-store.ts' && /\b(FROM|INTO|UPDATE)\s+export_(job|chunk)\b/i.test(readFileSync(join(projectRoot, file), 'utf8')));
    assert.deepEqual(sql, []);
  });

  test('only the change feed (src/storage/change-feed.ts) sends NOTIFY', () => {
    const offenders = sourceFiles(SRC)
      .map((file) => relative(projectRoot, file))
      .filter((file) => file !== 'src/storage/change-feed.ts' && /\bpg_notify\b|['"`]\s*NOTIFY\s/i.test(readFileSync(join(projectRoot, file), 'utf8')));
    assert.deepEqual(offenders, []);
  });

  test('SQL on the resource table lives only under src/storage (tenancy is decided there)', () => {
    const offenders = sourceFiles(SRC)
      .map((file) => relative(projectRoot, file))
      .filter((file) => !file.startsWith('src/storage/') && /\b(FROM|JOIN|INTO|UPDATE)\s+resource\b/i.test(readFileSync(join(projectRoot, file), 'utf8')));
    assert.deepEqual(offenders, []);
  });

  test('every docs/… reference in src/ names an existing file and heading', () => {
    const anchorsOf = (file: string) =>
      new Set(
        readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => /^#{1,6} /.test(l))
          .map((l) => l.replace(/^#+ /, '').trim().toLowerCase().replace(/[^\w\- ]/g, '').replace(/ /g, '-')),
      );
    const broken: string[] = [];
    for (const file of sourceFiles(SRC)) {
      for (const [, doc, anchor] of readFileSync(file, 'utf8').matchAll(/\b(docs\/[\w-]+\.md|README\.md)(?:#([\w-]+))?/g)) {
        const path = join(projectRoot, doc);
        if (!existsSync(path)) broken.push(`${relative(projectRoot, file)}: ${doc}`);
        else if (anchor && !anchorsOf(path).has(anchor)) broken.push(`${relative(projectRoot, file)}: ${doc}#${anchor}`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
