/**
 * The end of this turn of the event loop: one promise shared by every caller of the turn,
 * settled from a `setImmediate` — after the callbacks of the turn's poll (every request read
 * from the sockets in it) have run.
 *
 * What waits for it: PGlite's `caughtUp` (a cached read, a kept answer), so the requests read in
 * one poll are answered together at its end rather than each in turn between the reads — their
 * responses go out together and the next poll finds more requests at once (docs/benchmarks.md:
 * computed SNOMED CT `$lookup`s +13%, reads of a kept row +13–22%, server CPU per request
 * 175 → 146 µs). On PostgreSQL the listening barrier is sent at the same point (pg-listener.ts).
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
