// What `scifi ctl <run> limits` checks and moves beyond the run's own numbers (a41), so a changed
// limit reaches every consumer or is refused: the site policy caps a raise as it caps a SAM
// (`maxWalltime`; `usdPerDay` for a daemon task's run), and a run inside a `scifi submit` job gets
// the job's SLURM time limit raised with its wall time (or the change is refused with SLURM's word).
import { loadSitePolicy, sitePolicyPath } from "../../policy/site.ts";
import type { ControlLimits } from "./control.ts";

/** Why the site policy refuses these limits, or undefined. */
export function siteRefusal(
  home: string,
  limits: ControlLimits,
  daemonTask: boolean,
  /** The run's own site policy file (state.json `sitePolicyFile`); absent: the home's. */
  sitePolicyFile?: string,
): string | undefined {
  const file = sitePolicyFile ?? sitePolicyPath(home);
  const { policy, source } = loadSitePolicy(file, sitePolicyFile !== undefined);
  const where = source ?? "the built-in site policy";
  if (limits.walltimeSec !== undefined && limits.walltimeSec > policy.maxWalltimeSec)
    return `--walltime ${limits.walltimeSec} s is past the site policy's maxWalltime (${policy.maxWalltimeSec} s, ${where}), which caps what a SAM may ask for too; give at most ${policy.maxWalltimeSec} s`;
  if (
    daemonTask &&
    limits.usd !== undefined &&
    policy.usdPerDay !== undefined &&
    limits.usd > policy.usdPerDay
  )
    return `--budget-usd ${limits.usd} is past the site's daily money limit usdPerDay ${policy.usdPerDay} (${where}): a daemon task's budget must fit in one day's limit, as its SAM's budget_usd must; give at most ${policy.usdPerDay}`;
  return undefined;
}

/**
 * For a run that a live `scifi submit` job holds: raises the job's time limit to the new wall time
 * plus the placement margin (as `scifi submit` set it), before the decision is written. Returns a
 * line for the person (undefined: no job holds the run, or its limit already allows it); throws a
 * message when SLURM refuses, so ctl refuses the change rather than report a deadline SLURM would cut.
 */
export async function reachPlacementJob(
  home: string,
  runId: string,
  walltimeSec: number,
): Promise<string | undefined> {
  const { listSubmissions, findRunState, PLACEMENT_TIME_MARGIN_SEC } = await import(
    "../../jobs/placement.ts"
  );
  const record = listSubmissions(home).find((r) => findRunState(home, r)?.runId === runId);
  if (!record) return undefined;
  const { SlurmClient, LIVE_STATES } = await import("../../jobs/slurm.ts");
  const { formatSlurmTime, parseSlurmTime } = await import("../../jobs/units.ts");
  const slurm = new SlurmClient();
  const info = await slurm.jobInfo(record.jobId).catch(() => undefined);
  if (!info || !LIVE_STATES.has(info.state)) return undefined;
  const current = info.timeLimit ? parseSlurmTime(info.timeLimit) : undefined;
  const needed = walltimeSec + PLACEMENT_TIME_MARGIN_SEC;
  if (current !== undefined && current >= needed) return undefined;
  try {
    await slurm.updateTimeLimit(record.jobId, formatSlurmTime(needed));
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    const most = current !== undefined ? Math.max(0, current - PLACEMENT_TIME_MARGIN_SEC) : undefined;
    throw new Error(
      `the run is held by SLURM job ${record.jobId} (TimeLimit ${info.timeLimit ?? "unknown"}), and SLURM refused to raise it to ${formatSlurmTime(needed)} (${why}); ${most !== undefined ? `give --walltime at most ${most} s, ` : ""}or ask a SLURM operator to raise the job's limit first`,
    );
  }
  return `SLURM job ${record.jobId}'s TimeLimit raised ${info.timeLimit ?? "?"} → ${formatSlurmTime(needed)}`;
}
