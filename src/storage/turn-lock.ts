/**
 * A first-come-first-served lock with a waiting limit: the embedded database has one
 * connection, and a request that cannot have its turn within the limit is told so (503)
 * instead of queueing for ever (docs/errors.md#database-limits).
 *
 * Background work (an index loading in many statements) waits behind requests: a waiting
 * request has the next turn, except that background work gets one turn after
 * {@link FOREGROUND_STREAK} request turns in a row, so it is slowed under load but never starved.
 */
export const FOREGROUND_STREAK = 8;

export class TurnLock {
  private held = false;
  private heldSince = 0;
  private readonly waiting: Array<{ grant: () => void }> = [];
  private readonly background: Array<{ grant: () => void }> = [];
  /** Request turns granted in a row while background work waited. */
  private streak = 0;

  /**
   * Resolves with a release function once it is this caller's turn; rejects with `onTimeout()`
   * after `timeoutMs` (0: wait for ever). `background` work waits behind requests (see above).
   */
  acquire(timeoutMs: number, onTimeout: () => Error, background = false): Promise<() => void> {
    if (!this.held) return Promise.resolve(this.take());
    const queue = background ? this.background : this.waiting;
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
              const at = queue.indexOf(waiter);
              if (at >= 0) queue.splice(at, 1);
              reject(onTimeout());
            }, timeoutMs)
          : undefined;
      queue.push(waiter);
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
      const next = this.next();
      if (next) next.grant();
      else this.held = false;
    };
  }

  /** Who has the next turn: a waiting request, unless background work has waited a streak of them. */
  private next(): { grant: () => void } | undefined {
    if (this.background.length === 0) {
      this.streak = 0;
      return this.waiting.shift();
    }
    if (this.waiting.length > 0 && this.streak < FOREGROUND_STREAK) {
      this.streak++;
      return this.waiting.shift();
    }
    this.streak = 0;
    return this.background.shift();
  }
}
