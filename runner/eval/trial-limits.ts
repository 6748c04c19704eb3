// What limits each trial of an eval runs with. A run's limits are the defaults, then the caller's
// (`--limit`, a suite's `limits:`), then what the SAM itself sets (iterations, walltime,
// budget_usd: docs/loop.md). A suite value that a task's SAM sets differently would be dropped
// without a word for that task, so the suite is refused instead, naming both; the limits every
// task's trials run with are recorded in eval.json (`tasks[].limits`).
import { DEFAULT_LIMITS } from "../run/session/limits.ts";
import type { LimitConfig } from "../run-folder/state.ts";

/** What of a suite task (suite.ts SuiteTask, which imports this file) the limits need. */
export interface LimitedTask {
  name: string;
  dir: string;
  variants: readonly { file: string }[];
  samLimits?: Partial<LimitConfig>;
}

/** The front matter key behind each limit a SAM can set, and how its value reads there. */
const SAM_KEYS: Partial<Record<keyof LimitConfig, { key: string; show: (v: number) => string }>> = {
  iterations: { key: "iterations", show: (v) => String(v) },
  walltimeSec: { key: "walltime", show: (v) => `${v} s` },
  usd: { key: "budget_usd", show: (v) => String(v) },
};

export interface LimitConflict {
  key: keyof LimitConfig;
  message: string;
}

/** Every suite limit that a task's SAM sets to another value, one per task and key. */
export function limitConflicts(tasks: readonly LimitedTask[], suite: Partial<LimitConfig>): LimitConflict[] {
  const out: LimitConflict[] = [];
  for (const key of Object.keys(suite) as (keyof LimitConfig)[]) {
    const value = suite[key];
    for (const task of tasks) {
      const own = task.samLimits?.[key];
      if (value === undefined || own === undefined || own === value) continue;
      const sam = SAM_KEYS[key];
      const file = task.variants[0]?.file ?? task.dir;
      out.push({
        key,
        message: `limits.${key}: ${value} conflicts with ${file}, whose front matter sets ${sam?.key ?? key}: ${sam ? sam.show(own) : own}; a SAM's own request wins over a suite's limits, so ${value} would not apply to task '${task.name}': remove ${key} from the suite's limits, or make the two equal`,
      });
    }
  }
  return out;
}

/** The limits a task's trials run with: defaults, the suite's limits, the SAM's own requests. */
export function trialLimits(task: LimitedTask, suite: Partial<LimitConfig>): LimitConfig {
  return { ...DEFAULT_LIMITS, ...suite, ...(task.samLimits ?? {}) };
}
