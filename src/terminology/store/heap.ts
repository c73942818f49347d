import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * A full garbage collection, for loaders that hold hundreds of megabytes of maps while they
 * produce much short-lived garbage: V8 lets garbage grow in proportion to what is live before
 * it collects a large heap, so a LOINC release's loader would otherwise peak near 2 GiB
 * (docs/terminology.md#loinc). The collector is reached without `--expose-gc` on the command
 * line (the flag set at run time, the function taken from a fresh context).
 */
let gc: (() => void) | undefined;

export function collectGarbage(): void {
  if (!gc) {
    const given = (globalThis as { gc?: () => void }).gc;
    if (given) gc = given;
    else {
      setFlagsFromString('--expose_gc');
      gc = runInNewContext('gc') as () => void;
    }
  }
  gc();
}
