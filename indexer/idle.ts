// The wait between head polls once caught up, cut short when a process has just seen a receipt
// and knows a block is there (read-your-writes, D-62).

export class Idle {
  // A wake() while the loop is not sleeping skips its next sleep: the news is never lost.
  private woken = false;
  private stopSleeping: (() => void) | undefined;

  /** Sleeps `ms` once caught up with the head, or less when wake() says a new block is there. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.woken || signal.aborted) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        if (this.stopSleeping === done) this.stopSleeping = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.stopSleeping = done;
    });
  }

  wake(): void {
    this.woken = true;
    this.stopSleeping?.();
  }
}
