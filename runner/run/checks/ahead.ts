// Items run one after another, the next made ready while the current one runs: a check's sandbox
// starts (about half a second on Apptainer, issue 37's bench) while the check before it still runs.
// Only the making-ready overlaps; each `run` starts after the one before it has returned (its
// sandbox stopped), so no check's code ever runs beside another's.

export interface AheadSteps<I, P> {
  /** Whether `next` may be made ready while `current` runs (else it is made at its own turn). */
  ahead: (current: I, next: I) => boolean;
  /** Makes an item ready. A promise inside the result must not reject unhandled: catch it here. */
  prepare: (item: I) => P;
  run: (item: I, prepared: P) => Promise<void>;
  /** What was made ready and never run (the run before it threw): stopped and removed. */
  discard: (prepared: P) => Promise<void>;
}

export async function runAhead<I, P>(items: readonly I[], steps: AheadSteps<I, P>): Promise<void> {
  let next: { prepared: P } | undefined;
  try {
    for (const [i, item] of items.entries()) {
      const current = next ? next.prepared : steps.prepare(item);
      next = undefined;
      const running = steps.run(item, current);
      const following = items[i + 1];
      try {
        if (following !== undefined && steps.ahead(item, following)) {
          next = { prepared: steps.prepare(following) };
        }
      } catch (error) {
        await running.catch(() => undefined);
        throw error;
      }
      await running;
    }
  } finally {
    if (next) await steps.discard(next.prepared);
  }
}

/** A promise awaited later: its rejection then, not an unhandled one now. */
export function awaitedLater<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}
