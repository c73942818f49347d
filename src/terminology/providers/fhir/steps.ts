/**
 * Work written as steps: a generator that yields between pieces of some milliseconds each (an
 * index's or a SNOMED CT graph's build). `finish` runs it at once; `inTurns` lets the event
 * loop go between the pieces, so a build of a second's work never holds a request that long.
 */
export type Steps<T> = Generator<void, T>;

/** Runs the steps to their result, at once. */
export function finish<T>(steps: Steps<T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Runs the steps to their result, letting the event loop go (`setImmediate`) after each. */
export async function inTurns<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
