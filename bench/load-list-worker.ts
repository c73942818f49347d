import { parentPort, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import type { ListLoad, ListRequest } from './load-list.js';

/** The worker of `loadList` (bench/load-list.ts): one autocannon run over the list, its summary posted back. */
const { url, requests, seconds, connections } = workerData as { url: string; requests: ListRequest[]; seconds: number; connections: number };
let next = 0;
const result = await autocannon({
  url,
  duration: seconds,
  connections,
  requests: [
    {
      setupRequest: (req) => {
        const r = requests[next++ % requests.length];
        // Headers merged, never undefined: autocannon reads them case-insensitively (the bare
        // baseline's request has none of its own).
        return { ...req, method: r.method, path: r.path, body: r.body, headers: { ...(req.headers ?? {}), ...(r.headers ?? {}) } };
      },
    },
  ],
});
const summary: ListLoad = { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
parentPort?.postMessage(summary);
