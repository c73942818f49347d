/**
 * The end of this turn of the event loop: one promise shared by every caller of the turn,
 * settled from a `setImmediate` — after the callbacks of the turn's poll (every request read
 * from the sockets in it) have run.
 *
 * What waits for it: PGlite's `caughtUp` (a cached read, a kept answer), so the requests read in
 * one poll are answered together at its end rather than each in turn between the reads — their
 * responses go out together and the next poll finds more requests at once (docs/benchmarks.md:
 * computed SNOMED CT `$lookup`s 6,100 → 9,800/s, server CPU per request 167 → 106 µs; kept
 * reads of a row 22,000 → 31,000/s). One promise for all, not one `setImmediate` per caller:
 * with one each the turn's requests went on one at a time again (+13–22% only). On PostgreSQL
 * the listening barrier is sent at the same point (pg-listener.ts).
 */
let turn: Promise<void> | undefined;

export function endOfTurn(): Promise<void> {
  turn ??= new Promise<void>((resolve) =>
    setImmediate(() => {
      turn = undefined;
      resolve();
    }),
  );
  return turn;
}
