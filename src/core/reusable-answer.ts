/**
 * Answers that are given again unchanged (a cached `$lookup`, docs/terminology.md#answer-cache):
 * an operation's output marked reusable is frozen, formatted once and serialised once — the
 * layers that would otherwise redo that work per request (operations/invoke.ts formats,
 * http/server.ts serialises) ask here first. Identity is the key: a new output object is a new
 * answer, so whoever caches outputs decides when they are stale. Unmarked values pass through
 * untouched (one WeakSet look-up).
 */

const reusable = new WeakSet<object>();
const formatted = new WeakMap<object, unknown>();
const serialised = new WeakMap<object, string>();

/** Freezes `value` deeply and marks it reusable; answers it. */
export function markReusable<T extends object>(value: T): T {
  deepFreeze(value);
  reusable.add(value);
  return value;
}

/** True when `value` was marked reusable. */
export function isReusable(value: unknown): value is object {
  return typeof value === 'object' && value !== null && reusable.has(value);
}

/** `format(output)`, done once per reusable output (the result is reusable too). */
export function formatOnce<T>(output: unknown, format: () => T): T {
  if (!isReusable(output)) return format();
  let body = formatted.get(output) as T | undefined;
  if (body === undefined) {
    body = format();
    if (typeof body === 'object' && body !== null) markReusable(body);
    formatted.set(output, body);
  }
  return body;
}

/** `JSON.stringify(body)`, done once per reusable body. */
export function jsonOnce(body: unknown): string {
  if (!isReusable(body)) return JSON.stringify(body);
  let text = serialised.get(body);
  if (text === undefined) {
    text = JSON.stringify(body);
    serialised.set(body, text);
  }
  return text;
}

function deepFreeze(value: object): void {
  if (Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const v of Object.values(value) as unknown[]) if (typeof v === 'object' && v !== null) deepFreeze(v);
}
