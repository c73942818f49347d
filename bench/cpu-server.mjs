// The part the CPU-per-request benchmarks share (bench/cpu-per-request.mjs, bench/cpu-per-write.mjs):
// starts the built server of a checkout (`<dir>/dist/lattice.js`) on an in-memory PGlite database,
// logs in as the super admin, and measures the server process's CPU time from /proc (Linux) around
// 3 rounds of autocannon load — the load generator's own CPU does not count.
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const PASSWORD = 'admin-password-123';

/**
 * Runs `use` against a started, logged-in server and stops it afterwards. `use` gets
 * `{ base, headers, rounds, cpuMs, pid, idle }`: `headers` carry the bearer token, `rounds(options, label, count = 3)` runs
 * `count` autocannon rounds of `options` and answers the server CPU µs per request of each; `cpuMs()`
 * is the server process's CPU time so far (every thread), `pid` its process id; `idle()`
 * resolves once the server is idle (background index builds done).
 */
export async function withMeasuredServer({ dir, port, env = {}, startTries, nodeArgs = [] }, use) {
  const base = `http://127.0.0.1:${port}`;
  // BENCH_NODE_ARGS: more options for the server's node (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  const extraArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const server = spawn(process.execPath, [...nodeArgs, ...extraArgs, `${dir}/dist/lattice.js`, 'serve'], {
    env: { ...process.env, PORT: String(port), LATTICE_DATA_DIR: 'memory://', LATTICE_ADMIN_PASSWORD: PASSWORD, LATTICE_PASSWORD_COST: '10', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const post = async (path, contentType, text) => {
    const res = await fetch(base + path, { method: 'POST', headers: { 'content-type': contentType }, body: text });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${server.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, in clock ticks of 10 ms
  };
  try {
    for (let i = 0; i < startTries; i++) {
      const up = await fetch(`${base}/healthz`).then((r) => r.ok, () => false);
      if (up) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const login = await post('/auth/login', 'application/json', JSON.stringify({ email: 'admin@example.com', password: PASSWORD, codeChallenge: challenge, codeChallengeMethod: 'S256' }));
    const tokens = await post('/oauth2/token', 'application/x-www-form-urlencoded', `grant_type=authorization_code&code=${login.code}&code_verifier=${verifier}`);
    const headers = { authorization: `Bearer ${tokens.access_token}` };
    const rounds = async (options, label, count = 3) => {
      const figures = [];
      for (let round = 0; round < count; round++) {
        const before = cpuMs();
        const result = await autocannon({ url: base, headers, ...options });
        if (result.non2xx > 0) throw new Error(`${label}: ${result.non2xx} answers were not 2xx`);
        figures.push(Math.round(((cpuMs() - before) * 1000) / result.requests.total));
      }
      return figures;
    };
    // `idle()`: resolves once the server spends under 2% of a core for a second (background index builds done).
    const idle = async () => {
      for (let i = 0; i < 300; i++) {
        const before = cpuMs();
        await new Promise((r) => setTimeout(r, 1000));
        if (cpuMs() - before <= 20) return;
      }
    };
    await use({ base, headers, rounds, cpuMs, pid: server.pid, idle });
  } finally {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited; // a profile is written as the process ends
  }
}
