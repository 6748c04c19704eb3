// What the SAM itself asks of a run's limits and ranks: its requests override the defaults and the
// caller's options; the work rank moves within one rank of the SAM's hint (1 to 3 without one).

import type { LimitConfig } from "../../run-folder/state.ts";
import type { SamDocument } from "../../sam/types.ts";
import { DEFAULT_LIMITS } from "./limits.ts";

/** Defaults, overridden by options, then by what the SAM itself requests. */
export function effectiveLimits(sam: SamDocument, overrides: Partial<LimitConfig> = {}): LimitConfig {
  return { ...DEFAULT_LIMITS, ...overrides, ...samLimitRequests(sam) };
}

/** The limits the SAM's front matter sets (iterations, walltime, budget_usd), as limit keys. */
export function samLimitRequests(sam: SamDocument): Partial<LimitConfig> {
  const m = sam.metadata;
  return {
    ...(m.iterations !== undefined ? { iterations: m.iterations } : {}),
    ...(m.walltimeSec !== undefined ? { walltimeSec: m.walltimeSec } : {}),
    ...(m.budgetUsd !== undefined ? { usd: m.budgetUsd } : {}),
  };
}

export function rankRange(sam: SamDocument): { min: number; max: number } {
  const hint = sam.metadata.rank?.work;
  return hint === undefined ? { min: 1, max: 3 } : { min: Math.max(1, hint - 1), max: hint + 1 };
}

export function clampRank(rank: number, range: { min: number; max: number }): number {
  return Math.min(range.max, Math.max(range.min, rank));
}
