// `npm run bench -- --smoke` runs every bench at a small size, so CI sees a bench that can no longer
// complete (a fixture the code stopped accepting, a renamed export) without paying for the timings.
// The full sizes are the agreed ones: only they are judged against their targets.

/** True under `npm run bench -- --smoke` (scripts/bench.ts sets it before any bench is imported). */
export const SMOKE = process.env.SCIFI_BENCH_SMOKE === "1";

/** The full size, or the small one in smoke mode. */
export function scaled(full: number, smoke: number): number {
  return SMOKE ? smoke : full;
}
