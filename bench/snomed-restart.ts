import { descendants, type SnomedLike } from './snomed-like.js';
import type { Rf2Release } from './snomed-rf2.js';
import { procStatus, startLatticeProcess } from './server-process.js';

/**
 * Restart → first answer (docs/terminology.md#persisted-indexes): for each kind of question, a
 * fresh server process on the imported data (nothing in memory), its time to answer /healthz,
 * then the time of its first answer of that kind — `$lookup`, `$subsumes`, an ECL `$expand`
 * and an ECL `$validate-code` — each on its own start, so each reads what it needs itself.
 * Also the server's peak RSS after that answer. The question is sent after the bench has logged
 * in (0.3–1.7 s on the shared machine); a server opens its persisted indexes as soon as it
 * listens, so that opening runs while the bench logs in, and a question sent earlier would wait
 * for the rest of it (docs/benchmarks.md records how long it takes).
 */
export async function restartRows(
  env: Record<string, string>,
  m: SnomedLike,
  r: Rf2Release,
  rows: string[],
  driver: string,
  token: (url: string) => Promise<string>,
): Promise<void> {
  const sct = 'http://snomed.info/sct';
  const focus = r.ids[m.focus];
  // A direct child of the focus (breadth first: the first descendants), active (snomed-rf2.ts makes one in eight inactive).
  const member = r.ids[descendants(m, m.focus).find((i) => i !== m.focus && !(i > 20 && i % 8 === 5)) as number];
  const ecl = (e: string) => encodeURIComponent(`${sct}?fhir_vs=ecl/${e}`);
  const firsts: Array<[string, string, (body: unknown) => boolean]> = [
    ['`$lookup`', `/fhir/R4/CodeSystem/$lookup?system=${sct}&code=${r.ids[1000]}`, (b) => param(b, 'display') !== undefined],
    ['`$subsumes`', `/fhir/R4/CodeSystem/$subsumes?system=${sct}&codeA=${focus}&codeB=${member}`, (b) => param(b, 'outcome') === 'subsumes'],
    ['ECL `$expand` (`<< X`, count=10)', `/fhir/R4/ValueSet/$expand?count=10&url=${ecl(`<< ${focus}`)}`, (b) => ((b as { expansion?: { total?: number } }).expansion?.total ?? 0) > 0],
    ['ECL `$validate-code` (`<< X`)', `/fhir/R4/ValueSet/$validate-code?url=${ecl(`<< ${focus}`)}&system=${sct}&code=${member}`, (b) => param(b, 'result') === true],
  ];
  for (const [label, path, right] of firsts) {
    const t0 = performance.now();
    const server = await startLatticeProcess(env);
    const ready = performance.now() - t0;
    try {
      const auth = { authorization: `Bearer ${await token(server.url)}` };
      const t1 = performance.now();
      const res = await fetch(server.url + path, { headers: auth });
      const body: unknown = await res.json();
      const ms = performance.now() - t1;
      if (res.status !== 200 || !right(body)) throw new Error(`wrong first answer ${path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      const rss = procStatus(server.pid, 'VmHWM');
      rows.push(`| ${driver} | restart → first ${label} (goal ≤ 1 s) | ${(ms / 1000).toFixed(2)} s (server ready in ${(ready / 1000).toFixed(1)} s; peak RSS ${(rss / 2 ** 30).toFixed(2)} GiB) |`);
    } finally {
      await server.stop();
    }
  }
}

/** The value of a Parameters parameter (its first value[x]). */
function param(body: unknown, name: string): unknown {
  const p = (body as { parameter?: Array<Record<string, unknown>> }).parameter?.find((x) => x.name === name);
  if (!p) return undefined;
  const key = Object.keys(p).find((k) => k.startsWith('value'));
  return key ? p[key] : undefined;
}
