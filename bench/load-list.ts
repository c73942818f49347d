import { Worker } from 'node:worker_threads';

/** One request of a list loaded in turn. */
export interface ListRequest {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/** What a load over a list gave. */
export interface ListLoad {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/**
 * autocannon over `requests` in turn (each request the next of the list), run in a worker
 * thread (bench/load-list-worker.ts): the load generator has a heap of its own. In the bench's
 * own thread it shared the heap of a 500,000-concept model and its request lists, and its
 * collections made it the bottleneck — a bare node:http server measured 26,700/s there against
 * 48,000–62,000/s from a small process, which pushed every ratio towards 1 (docs/benchmarks.md).
 */
export function loadList(url: string, requests: ListRequest[], options: { seconds: number; connections: number }): Promise<ListLoad> {
  const worker = new Worker(new URL('./load-list-worker.js', import.meta.url), { workerData: { url, requests, seconds: options.seconds, connections: options.connections } });
  return new Promise<ListLoad>((resolve, reject) => {
    worker.once('message', (result: ListLoad) => resolve(result));
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the load worker exited with ${code}`));
    });
  });
}
