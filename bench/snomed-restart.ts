import { descendants, type SnomedLike } from './snomed-like.js';
import type { Rf2Release } from './snomed-rf2.js';
import { FatalError, procStatus, startLatticeProcess } from './server-process.js';

/**
 * Restart → first answer (docs/terminology.md#persisted-indexes): for each kind of question, a
 * fresh server process on the imported data (nothing in memory), timed from the moment the
 * process is spawned to its first right answer of that kind — `$lookup`, `$subsumes`, an ECL
 * `$expand` and an ECL `$validate-code` — each on its own start, so each reads what it needs
 * itself. The question carries a token obtained from an earlier process (tokens outlive a
 * restart), and is asked every 10 ms from the spawn until it is answered: what a client that
 * retries sees. Also when the process first answered anything (it listens) and its peak RSS.
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
  const before = await startLatticeProcess(env);
  const auth = { authorization: `Bearer ${await token(before.url)}` };
  await before.stop();
  for (const [label, path, right] of firsts) {
    const t0 = performance.now();
    let listening: number | undefined;
    const server = await startLatticeProcess(env, async (url) => {
      const res = await fetch(url + path, { headers: auth });
      listening ??= performance.now() - t0;
      if (res.status === 503) return false; // starting
      const body: unknown = await res.json();
      if (res.status !== 200 || !right(body)) throw new FatalError(`wrong first answer ${path}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      return true;
    }, 10);
    const ms = performance.now() - t0;
    try {
      const rss = procStatus(server.pid, 'VmHWM');
      rows.push(`| ${driver} | restart → first ${label} (goal ≤ 1 s) | ${(ms / 1000).toFixed(2)} s from the process's spawn (listening after ${((listening ?? ms) / 1000).toFixed(2)} s; peak RSS ${(rss / 2 ** 30).toFixed(2)} GiB) |`);
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
