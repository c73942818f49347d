/**
 * The schedule of a background worker of one node (the e-mail outbox, Subscription
 * notifications, Bulk Data export jobs): a pass right away at `start()`, then one when woken or
 * when the last pass said, at the latest after `pollMs`. One pass at a time: wake-ups during a
 * pass are coalesced into one pass right after it. Its timers never keep the process alive.
 * A worker extends it with its `pass` and `onError`.
 */
export abstract class BackgroundLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private wakeAgain = false;
  private stopping = false;

  /** `pollMs`: the longest wait between passes; it covers a wake-up that was missed (another node's, a lost notification). */
  constructor(private readonly pollMs: number) {}

  /**
   * One pass over the work that is due. `woken`: the pass was asked for by `wake()` (a commit
   * announced work), not by the poll. Resolves to the milliseconds until the next pass, or
   * undefined for `pollMs`.
   */
  protected abstract pass(woken: boolean): Promise<number | undefined>;

  /** A pass that failed (not called once the loop is stopped). */
  protected abstract onError(err: unknown): void;

  /** True once `stop()` was called: a long pass checks it to end early. */
  get stopped(): boolean {
    return this.stopping;
  }

  /** Starts the loop: a first pass right away. */
  start(): void {
    this.schedule(0, false);
  }

  /** A pass as soon as possible. */
  wake(): void {
    if (this.stopping) return;
    if (this.running) this.wakeAgain = true;
    else this.schedule(0, true);
  }

  /** No more passes; waits for the one in flight. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(ms: number, woken: boolean): void {
    if (this.stopping) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(woken), ms);
    this.timer.unref();
  }

  private run(woken: boolean): void {
    if (this.running || this.stopping) return;
    this.wakeAgain = false;
    let next = this.pollMs;
    this.running = this.pass(woken)
      .then((ms) => {
        if (ms !== undefined) next = ms;
      })
      .catch((err: unknown) => {
        if (!this.stopping) this.onError(err);
      })
      .finally(() => {
        this.running = undefined;
        const again = this.wakeAgain;
        this.schedule(again ? 0 : next, again);
      });
  }
}
