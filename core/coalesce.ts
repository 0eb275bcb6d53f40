// Many callers, one statement: calls made in the same turn of the event loop, or while the
// previous batch is still running, go out together as one call of `run` (group commit). Under
// load a batch of deliveries' outcomes is one UPDATE instead of hundreds; when idle a call goes
// out at the next turn, alone. Built on DataLoader (its batching, without its cache), with a
// schedule that waits for the batch in flight.
import DataLoader from "dataloader";

export interface CoalesceOptions {
  /** Inputs per call of `run` at most (a statement's parameter stays bounded). */
  maxBatch?: number;
  /**
   * Real ms a batch collects for, once the one in flight is done (default 0: the rest of that
   * turn): for writes nobody waits on at once (a log row), so many go as one statement.
   */
  collectMs?: number;
}

/**
 * Wraps `run(inputs) => outputs` (one output per input, in order) as a function of one input.
 * A batch whose `run` throws rejects each of its callers with that error.
 */
export function coalesce<I, O>(
  run: (inputs: readonly I[]) => Promise<O[]>,
  { maxBatch = 500, collectMs = 0 }: CoalesceOptions = {},
): (input: I) => Promise<O> {
  let inFlight: Promise<unknown> = Promise.resolve();
  const loader = new DataLoader<I, O>(
    (inputs) => {
      const batch = run(inputs);
      inFlight = batch.catch(() => undefined);
      return batch;
    },
    {
      cache: false,
      maxBatchSize: maxBatch,
      // The next batch collects until the one in flight is done, then for the rest of that turn.
      batchScheduleFn: (dispatch) => {
        void inFlight.then(() => (collectMs > 0 ? setTimeout(dispatch, collectMs) : setImmediate(dispatch)));
      },
    },
  );
  return (input) => loader.load(input);
}
