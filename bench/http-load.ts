import autocannon, { type Request } from 'autocannon';

/** Result of one autocannon run. */
export interface LoadResult {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

/** Runs autocannon against one URL for `seconds` with `connections` (loopback only). */
export async function load(
  url: string,
  options: {
    seconds?: number;
    connections?: number;
    headers?: Record<string, string>;
    method?: 'GET' | 'POST' | 'PUT';
    /** A fixed body, or one made for each request (with its path, when it gives one). */
    body?: string | (() => string | { path: string; body: string });
  } = {},
): Promise<LoadResult> {
  const body = options.body;
  const result = await autocannon({
    url,
    duration: options.seconds ?? 5,
    connections: options.connections ?? 10,
    headers: options.headers,
    method: options.method ?? 'GET',
    ...(typeof body === 'function'
      ? {
          requests: [
            {
              setupRequest: (req: Request): Request => {
                const made = body();
                return typeof made === 'string' ? { ...req, body: made } : { ...req, path: made.path, body: made.body };
              },
            },
          ],
        }
      : { body }),
  });
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

/** Formats a table of named results with a ratio against the first row. */
export function table(rows: Array<[string, LoadResult]>): string {
  const base = rows[0]?.[1].requestsPerSecond || 1;
  const lines = ['| case | req/s | p50 ms | p99 ms | errors | non-2xx | ratio to first |', '|---|---|---|---|---|---|---|'];
  for (const [name, r] of rows) {
    lines.push(
      `| ${name} | ${r.requestsPerSecond.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} | ${(r.requestsPerSecond / base).toFixed(2)} |`,
    );
  }
  return lines.join('\n');
}
