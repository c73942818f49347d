/**
 * A first-come-first-served lock with a waiting limit: the embedded database has one
 * connection, and a request that cannot have its turn within the limit is told so (503)
 * instead of queueing for ever (docs/errors.md#database-limits).
 */
export class TurnLock {
  private held = false;
  private heldSince = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];

  /** Resolves with a release function once it is this caller's turn; rejects with `onTimeout()` after `timeoutMs` (0: wait for ever). */
  acquire(timeoutMs: number, onTimeout: () => Error): Promise<() => void> {
    if (!this.held) return Promise.resolve(this.take());
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: () => {
          if (timer) clearTimeout(timer);
          resolve(this.take());
        },
      };
      const timer =
        timeoutMs > 0
          ? setTimeout(() => {
              const at = this.waiting.indexOf(waiter);
              if (at >= 0) this.waiting.splice(at, 1);
              reject(onTimeout());
            }, timeoutMs)
          : undefined;
      this.waiting.push(waiter);
    });
  }

  /** Takes the lock now when nobody holds it (then nobody waits either), else undefined. */
  tryAcquire(): (() => void) | undefined {
    return this.held ? undefined : this.take();
  }

  /** How long the current holder has held the lock (ms), or undefined when free. */
  heldForMs(): number | undefined {
    return this.held ? Date.now() - this.heldSince : undefined;
  }

  private take(): () => void {
    this.held = true;
    this.heldSince = Date.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.held = false;
    };
  }
}
