// The eval's own work around each trial's run, timed by part for `npm run bench eval` (docs/eval.md,
// "Benchmark"): the resume check (a run that ended before a kill), the fresh copy of the task folder
// (copied, other descriptions removed, compared with the plan), the trial's record (its run's
// history and tape read, result.json written), the summary computed, and its files written
// (summary.json and the CSVs). Each part is timed on the wall clock and on this thread's CPU clock: the difference is
// waiting (fsync of the atomic writes, the scheduler of a loaded machine), not work.

export const BOOKKEEPING_PARTS = ["resume", "copy", "record", "summary", "summaryFiles"] as const;
export type BookkeepingPart = (typeof BOOKKEEPING_PARTS)[number];

export interface PartTime {
  wallMs: number;
  cpuMs: number;
}

export type Bookkeeping = Record<BookkeepingPart, PartTime>;

export function emptyBookkeeping(): Bookkeeping {
  return {
    resume: { wallMs: 0, cpuMs: 0 },
    copy: { wallMs: 0, cpuMs: 0 },
    record: { wallMs: 0, cpuMs: 0 },
    summary: { wallMs: 0, cpuMs: 0 },
    summaryFiles: { wallMs: 0, cpuMs: 0 },
  };
}

/** The wall and CPU milliseconds of every part together. */
export function totalOf(b: Bookkeeping): PartTime {
  let wallMs = 0;
  let cpuMs = 0;
  for (const part of BOOKKEEPING_PARTS) {
    wallMs += b[part].wallMs;
    cpuMs += b[part].cpuMs;
  }
  return { wallMs, cpuMs };
}

function cpuNow(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/** Adds the time of `fn` to `part` of `into`. */
export function timePart<T>(into: Bookkeeping, part: BookkeepingPart, fn: () => T): T {
  const wall = performance.now();
  const cpu = cpuNow();
  try {
    return fn();
  } finally {
    into[part].wallMs += performance.now() - wall;
    into[part].cpuMs += cpuNow() - cpu;
  }
}

/**
 * As timePart, for a part that awaits (the copy's comparison walks the folder): the wall time of an
 * await may include other trials' work that ran meanwhile, so its CPU figure is an upper bound too.
 */
export async function timePartAsync<T>(
  into: Bookkeeping,
  part: BookkeepingPart,
  fn: () => Promise<T>,
): Promise<T> {
  const wall = performance.now();
  const cpu = cpuNow();
  try {
    return await fn();
  } finally {
    into[part].wallMs += performance.now() - wall;
    into[part].cpuMs += cpuNow() - cpu;
  }
}
