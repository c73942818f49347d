#!/usr/bin/env node
// Runs the README's shell examples in order against a freshly started server, so the README
// stays true (test/readme-walkthrough.test.ts runs this).
//
//   node scripts/readme-walkthrough.mjs [--verbose] [--base <url> --password <pw>]
//
// Every ```sh block of README.md is split into examples (groups of lines between blank lines)
// and all of them run, in order, in one bash session (so `TOKEN=…` set by one example is there for
// the next), with B=<server> and PASSWORD=<super admin password>. An example fails when a
// command in it fails; `curl` there fails on any 4xx/5xx answer (--fail-with-body). A few
// examples also have their answer checked (CHECKS below). Without --base a new server is started
// from the source (tsx): in-memory PGlite, a free port, a known admin password; it is stopped at
// the end. Needs bash, curl and jq (as the README's reader does). Exit code 0 when all pass.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const option = (name) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};

/** Checks of an example's output beyond "no command failed": the example is found by its text. */
const CHECKS = [
  { name: 'the token response names the project', example: /PROJECT=\$\(/, check: (out, vars) => /^[0-9a-f-]{36}$/.test(vars.PROJECT ?? '') || 'PROJECT is not a project id' },
  { name: 'search finds the patient just created', example: /Patient\?name=smi/, check: (out) => (/"total":1\b/.test(out) && out.includes('"family":"Smith"')) || 'no "total":1 with Ann Smith' },
  { name: 'the compartment lists the observation', example: /Observation\?status=final/, check: (out) => (/"total":1\b/.test(out) && out.includes('"text":"pulse"')) || 'no pulse Observation' },
  { name: '$everything answers a searchset with the patient', example: /\\\$everything/, check: (out) => (out.includes('"type":"searchset"') && out.includes('"resourceType":"Patient"')) || 'no searchset with the Patient' },
  { name: '$validate reports the bad gender', example: /Patient\/\\\$validate/, check: (out) => out.includes('is not in the required value set') || 'no binding issue' },
  { name: '$lookup answers the display', example: /administrative-gender&code=male/, check: (out) => out.includes('"valueString":"Male"') || 'no display Male' },
  { name: '$validate-code says true', example: /ValueSet\/\\\$validate-code/, check: (out) => out.includes('"valueBoolean":true') || 'result is not true' },
  { name: '$subsumes answers subsumes', example: /codeA=_ActEncounterCode&codeB=AMB/, check: (out) => out.includes('"valueCode":"subsumes"') || 'outcome is not subsumes' },
  { name: '$expand lists the codes', example: /ValueSet\/\\\$expand/, check: (out) => out.includes('"code":"female"') || 'female is not in the expansion' },
  { name: '$translate maps female to F', example: /ConceptMap\/\\\$translate/, check: (out) => (out.includes('"code":"F"') && out.includes('"valueBoolean":true')) || 'no translation to F' },
  { name: 'the terminology capabilities list expansion parameters', example: /mode=terminology/, check: (out) => out.includes('"count"') || 'no count parameter' },
  { name: '$import adds the concept', example: /CodeSystem\/\\\$import/, check: (out) => out.includes('"valueString":"X one"') || '$lookup does not find x1' },
  { name: 'a Range of the uploaded file answers its first bytes', example: /Range: bytes=0-7/, check: (out) => out.trim().endsWith('Referral') || 'no "Referral"' },
  { name: 'the uploaded file read as FHIR JSON has its data', example: /Accept: application\/fhir\+json/, check: (out) => out.includes(`"data":"${Buffer.from('Referral letter for Ann Smith\n').toString('base64')}"`) || 'no base64 data' },
  { name: 'the invite answers a membership', example: /\/invite/, check: (out) => out.includes('"resourceType":"ProjectMembership"') || 'no ProjectMembership' },
  { name: 'userinfo names the user', example: /oauth2\/userinfo/, check: (out) => out.includes('"fhirUser":') || 'no fhirUser' },
  { name: 'the export file holds the Patients', example: /select\(\.type=="Patient"\)/, check: (out) => out.includes('"resourceType":"Patient"') || 'no Patient line in the export file' },
  { name: 'an EHR launch id is issued', example: /\/auth\/launch/, check: (out) => out.includes('"launch":') || 'no launch id' },
  { name: 'the client acts in the Lab project, not the super admin\'s', example: /grant_type=client_credentials/, check: (out, vars) => (vars.LAB && out.includes(`"project":{"reference":"Project/${vars.LAB}"}`)) || 'the client token is not the Lab project\'s' },
  { name: 'the public client has redirect URIs and no secret', example: /"public":true/, check: (out) => (out.includes('"redirectUris":["https://portal.example.org/callback"]') && !out.includes('"secret"')) || 'no public client with its redirect URI' },
  { name: 'the member list names Grace', example: /CLINIC\/members -H/, check: (out, vars) => (out.includes('"type":"searchset"') && out.includes(`"id":"${vars.GRACE}"`)) || 'Grace is not listed' },
  { name: 'the removal answers Member removed', example: /members\/\$GRACE/, check: (out) => out.includes('"text":"Member removed"') || 'Grace was not removed' },
];

for (const tool of ['bash', 'curl', 'jq']) {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) fail(`${tool} is needed (the README's examples use it)`);
}

const examples = extractExamples(readFileSync(join(root, 'README.md'), 'utf8'));
const unused = CHECKS.filter((c) => !examples.some((e) => c.example.test(e.text)));
if (unused.length) fail(`the README changed: no example for the check(s) ${unused.map((c) => `"${c.name}"`).join(', ')}`);

let base = option('--base');
let password = option('--password');
let server;
if (!base) {
  password = `walkthrough-${randomBytes(6).toString('hex')}`;
  server = await startServer(password);
  base = server.base;
}
let results;
try {
  results = runExamples(examples, base, password);
} finally {
  await server?.stop();
}

let failed = 0;
for (const [i, example] of examples.entries()) {
  const r = results[i];
  const problems = [];
  if (!r) problems.push('did not run (an earlier example ended the session)');
  else if (r.status !== 0) problems.push(`a command failed (exit ${r.status})`);
  if (r && r.status === 0) {
    for (const c of CHECKS.filter((c) => c.example.test(example.text))) {
      const verdict = c.check(r.output, r.vars);
      if (verdict !== true) problems.push(`${c.name}: ${verdict}`);
    }
  }
  if (problems.length) failed++;
  console.log(`${problems.length ? 'FAIL' : 'ok  '} ${String(i + 1).padStart(2)} ${example.section}: ${example.title}`);
  if (problems.length || verbose) {
    for (const p of problems) console.log(`       ${p}`);
    const shown = (r?.output ?? '').trim();
    if (shown) console.log(shown.split('\n').map((l) => `       | ${l.length > 300 ? l.slice(0, 300) + '…' : l}`).join('\n'));
  }
}
console.log(`README walkthrough: ${examples.length - failed} of ${examples.length} examples ran as written${failed ? `; ${failed} did not` : ''}`);
if (failed && server) console.log(`server log (last lines):\n${server.log().split('\n').slice(-20).join('\n')}`);
process.exitCode = failed ? 1 : 0;

/** The ```sh blocks of the README, split at blank lines, with the heading they are under. */
function extractExamples(readme) {
  const out = [];
  let section = '';
  let inBlock = false;
  let lines = [];
  const flush = () => {
    const text = lines.join('\n').trim();
    lines = [];
    if (!text) return;
    const firstComment = text.split('\n').find((l) => l.trim().startsWith('#'));
    const firstCommand = text.split('\n').find((l) => !l.trim().startsWith('#'));
    const title = (firstComment ? firstComment.replace(/^\s*#\s*/, '') : firstCommand ?? '').slice(0, 90);
    out.push({ section, title, text });
  };
  for (const line of readme.split('\n')) {
    if (!inBlock && /^#{2,4} /.test(line)) section = line.replace(/^#+ /, '');
    else if (!inBlock && line.trim() === '```sh') inBlock = true;
    else if (inBlock && line.trim() === '```') {
      flush();
      inBlock = false;
    } else if (inBlock && line.trim() === '') flush();
    else if (inBlock) lines.push(line);
  }
  return out;
}

/**
 * One bash session for all examples. Each runs with an ERR trap (a failing command, also inside
 * `X=$(…)`, marks it failed without ending the session); its output and the variables it left
 * are reported between markers.
 */
function runExamples(list, baseUrl, pw) {
  const marker = `@@walkthrough-${randomBytes(4).toString('hex')}`;
  const names = [...new Set(list.flatMap((e) => [...e.text.matchAll(/^\s*([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1])))];
  const script = [
    'exec 2>&1', // curl's and bash's errors land in the output of the example that caused them
    'set -o pipefail',
    'curl() { command curl --fail-with-body --show-error "$@"; }',
    ...list.map((e, i) =>
      [
        `echo "${marker} start ${i}"`,
        "__failed=0; trap '__failed=1' ERR",
        e.text,
        'trap - ERR',
        'echo',
        ...names.map((n) => `echo "${marker} var ${n}=\${${n}:-}"`),
        `echo "${marker} end ${i} $__failed"`,
      ].join('\n'),
    ),
  ].join('\n');
  const res = spawnSync('bash', ['--noprofile', '--norc'], {
    input: script,
    encoding: 'utf8',
    env: { ...process.env, B: baseUrl, PASSWORD: pw },
    timeout: 300_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const out = `${res.stdout ?? ''}`;
  const results = [];
  let current;
  for (const line of out.split('\n')) {
    if (line.startsWith(`${marker} start `)) current = { output: '', vars: {}, status: -1 };
    else if (line.startsWith(`${marker} var `) && current) {
      const [k, ...v] = line.slice(`${marker} var `.length).split('=');
      current.vars[k] = v.join('=');
    } else if (line.startsWith(`${marker} end `) && current) {
      const [i, status] = line.slice(`${marker} end `.length).split(' ').map(Number);
      current.status = status;
      results[i] = current;
      current = undefined;
    } else if (current) current.output += line + '\n';
  }
  if (res.error) console.log(`the shell session failed: ${res.error.message}`);
  return results;
}

/**
 * `lattice serve` (the source through tsx, or the bundle `npm test` made) with an in-memory PGlite on a port the system assigns
 * (PORT=0): the address is read from the server's own "Lattice listening" log line, so no other
 * server that happens to take a port we picked can answer in its place.
 */
async function startServer(pw) {
  let log = '';
  // Under `npm test`, the bundle of the current source it made (test/support/cli.ts).
  const cli = process.env.LATTICE_TEST_CLI ? [process.env.LATTICE_TEST_CLI] : ['--import', 'tsx', 'src/main.ts'];
  const child = spawn(process.execPath, [...cli, 'serve'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LATTICE_DATA_DIR: 'memory://',
      LATTICE_ADMIN_EMAIL: 'admin@example.com',
      LATTICE_ADMIN_PASSWORD: pw,
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  let started = false;
  const base = await new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(`the server did not start listening within 120 s:\n${log}`);
    }, 120_000);
    const onData = (d) => {
      log += d;
      for (const line of log.split('\n')) {
        if (!line.includes('"Lattice listening"')) continue;
        try {
          const address = JSON.parse(line).address;
          clearTimeout(timer);
          started = true;
          resolve(String(address).replace('://localhost', '://127.0.0.1'));
          return;
        } catch {
          // a partial line: wait for the rest
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (d) => (log += d));
    child.on('exit', (code) => {
      if (!started) fail(`the server exited (${code}):\n${log}`);
    });
  });
  console.log(`# server ${base} (in-memory PGlite)`);
  return {
    base,
    log: () => log,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}


function fail(message) {
  console.error(`readme-walkthrough: ${message}`);
  process.exit(1);
}
