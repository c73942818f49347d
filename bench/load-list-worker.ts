import { parentPort, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import type { ListLoad, ListRequest } from './load-list.js';

/** The worker of `loadList` (bench/load-list.ts): one autocannon run over the list, its summary posted back. */
const { url, requests, seconds, connections } = workerData as { url: string; requests: ListRequest[]; seconds: number; connections: number };
let next = 0;
const options: autocannon.Options = {
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
};
// Off the main thread autocannon gives its raw counts (it is then one of its own workers): the
// latencies through its `aggregateResult`, requests a second as on the main thread (the mean of
// its one-second samples).
const raw = (await autocannon(options)) as unknown as { totalCompletedRequests: number; samples: number };
const aggregate = (autocannon as unknown as { aggregateResult: (results: unknown[], opts: autocannon.Options) => autocannon.Result }).aggregateResult;
const result = aggregate([raw], options);
const summary: ListLoad = { rps: raw.totalCompletedRequests / Math.max(1, raw.samples), p50: result.latency.p50, p99: result.latency.p99, errors: result.errors, non2xx: result.non2xx };
parentPort?.postMessage(summary);
