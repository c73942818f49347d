/**
 * The code of the FHIRPath evaluation thread (docs/errors.md#fhirpath-evaluation).
 *
 * A FHIRPath expression a caller writes can cost anything: 181 characters of nested
 * `(1|2|3|4).select(…)` take seconds, and the engine cannot be interrupted. So expressions that
 * come from requests are evaluated here, in a worker thread the HTTP thread can end at a deadline.
 * Like the embedded database's thread, it starts from this function's source text, so the same
 * code runs under tsx, from tsc's output and from the one-file bundle; the function refers to
 * nothing outside its own body.
 *
 * Protocol, one answer per message, in order:
 * - in: `{ id, resource, expression }` (where the results are), or `{ id, resource, expression,
 *   values: true, base?, vars? }` (what the results are: a profile's invariant on an element)
 * - out: `{ id, nodes }` — one entry per result: an element of `resource` as `{ location,
 *   propName, index, path, type }` (`location`: the property names and array indexes from the
 *   root to it), or a computed value as `{ value }`; `{ id, values }` — the results as JSON; or
 *   `{ id, error }` when the expression is not valid FHIRPath or fails.
 */

/** What the thread is started with (`workerData`): `import()`-able URLs resolved by the HTTP thread. */
export interface FhirPathThreadData {
  fhirpathUrl: string;
  modelUrl: string;
}

/** One result of an evaluation, as it crosses the thread boundary. */
export interface ThreadNode {
  /** Property names and array indexes from the resource to the element; absent for a computed value. */
  location?: Array<string | number>;
  propName?: string;
  index?: number;
  path?: string;
  type?: string;
  /** A result that is not an element of the resource (a boolean, a number, a string literal…). */
  value?: unknown;
}

export async function fhirpathThread(): Promise<void> {
  const threads = await import('node:worker_threads');
  const port = threads.parentPort as NonNullable<typeof threads.parentPort>;
  const data = threads.workerData as FhirPathThreadData;
  const unwrap = (mod: Record<string, unknown>) => (mod.default ?? mod) as Record<string, unknown>;
  const fhirpath = unwrap((await import(data.fhirpathUrl)) as Record<string, unknown>) as { evaluate: (...args: unknown[]) => unknown };
  const model = unwrap((await import(data.modelUrl)) as Record<string, unknown>);
  interface Node {
    data?: unknown;
    propName?: string;
    index?: number | null;
    path?: string;
    fhirNodeDataType?: string;
    parentResNode?: Node | null;
  }
  const describe = (result: unknown) => {
    if (result === null || typeof result !== 'object' || !('data' in result)) {
      let value: unknown = result;
      try {
        value = structuredClone(result);
      } catch {
        value = String(result);
      }
      return { value };
    }
    const node = result as Node;
    const location: Array<string | number> = [];
    for (let n: Node | null | undefined = node; n?.propName; n = n.parentResNode) {
      if (typeof n.index === 'number') location.push(n.index);
      location.push(n.propName);
    }
    return {
      location: location.reverse(),
      propName: node.propName,
      index: typeof node.index === 'number' ? node.index : undefined,
      path: node.path,
      type: node.fhirNodeDataType,
    };
  };
  port.on('message', (msg: { id: number; resource: unknown; expression: string; values?: boolean; base?: string; vars?: Record<string, unknown> }) => {
    let answer: Record<string, unknown>;
    try {
      if (msg.values) {
        const path = msg.base ? { base: msg.base, expression: msg.expression } : msg.expression;
        const result = fhirpath.evaluate(msg.resource, path, msg.vars, model, { resolveInternalTypes: true });
        answer = { id: msg.id, values: structuredClone(Array.isArray(result) ? result : []) };
      } else {
        const result = fhirpath.evaluate(msg.resource, msg.expression, undefined, model, { resolveInternalTypes: false });
        answer = { id: msg.id, nodes: (Array.isArray(result) ? result : []).map(describe) };
      }
    } catch (err) {
      answer = { id: msg.id, error: err instanceof Error ? err.message : String(err) };
    }
    port.postMessage(answer);
  });
  port.postMessage({ ready: true });
}

/** The thread's program: the function above, called (`__name` is what tsx's transform may refer to). */
export const fhirpathThreadSource = `var __name = (fn) => fn; (${fhirpathThread.toString()})().catch((err) => { console.error(err); process.exit(70); });`;
