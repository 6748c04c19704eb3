// The work behind `scifi plan <task>`: parse the SAM, load the site policy, resolve the spec and
// print exactly what a run would be granted (human or JSON). No container is started. Here, above
// policy and jobs, because it composes them (the jobs' sandbox, runtime host approval) the way a run
// does; the spec's human form is policy's own (runner/policy/describe.ts).
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import { loadJobsPolicy } from "../jobs/policy.ts";
import { jobNetworkNote, jobSandboxFor } from "../jobs/run-jobs.ts";
import { scifiHome } from "../paths.ts";
import { describeSpec, type PlanNotes } from "../policy/describe.ts";
import { PolicyRefused } from "../policy/refused.ts";
import { resolveSpec } from "../policy/resolve.ts";
import { loadSitePolicy, type SitePolicy, sitePolicyPath } from "../policy/site.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import { MAX_PENDING_HOST_REQUESTS } from "../run/gates/approve-hosts.ts";
import { effectiveLimits } from "../run/session/sam-limits.ts";
import { newRunId } from "../run-id.ts";
import { requiredActions } from "../sam/approval-actions.ts";
import { checkSummary, reviewOnlyLine } from "../sam/check-summary.ts";
import { formatDiagnostic } from "../sam/diagnostics.ts";
import { findSamFiles } from "../sam/discover.ts";
import { checkSam } from "../sam/gate.ts";
import type { SamDocument } from "../sam/types.ts";
import { gateOptions } from "../skills/sam-gate.ts";
import { visibleBlock, visibleJson } from "../terminal-text.ts";

/** `ok`: spec resolved; `refused`: the policy refused it; `invalid`: bad SAM, path or site policy file. */
export type PlanOutcome = "ok" | "refused" | "invalid";

export interface PlanOptions {
  json: boolean;
  sitePolicy?: string;
  env?: NodeJS.ProcessEnv;
  out: { write(text: string): unknown };
  err: { write(text: string): unknown };
}

export function planTask(task: string, options: PlanOptions): PlanOutcome {
  const env = options.env ?? process.env;
  const file = samFileOf(task, options.err);
  if (file === undefined) return "invalid";
  const home = scifiHome(env);
  // The gate every entry point runs (runner/sam/gate.ts): plan shows what run would do, or why not.
  const parsed = checkSam(file, gateOptions(home));
  if (!parsed.ok) {
    for (const d of parsed.diagnostics) options.err.write(`${formatDiagnostic(d)}\n`);
    return "invalid";
  }
  const policyFile = sitePolicyPath(home, options.sitePolicy, env);
  try {
    const site = loadSitePolicy(policyFile, Boolean(options.sitePolicy || env.SCIFI_SITE_POLICY));
    const spec = resolveSpec(parsed.sam, site.policy, { home, runId: newRunId(parsed.sam.metadata.name) });
    const notes = planNotes(parsed.sam, site.policy, policyFile, spec);
    if (options.json) {
      options.out.write(
        `${visibleJson({ task: file, sitePolicy: site.source ?? null, spec, ...notes }, 2)}\n`,
      );
    } else {
      // The SAM may be an agent's draft (scifi make-task): its text is shown, never obeyed.
      options.out.write(
        visibleBlock(describeSpec(spec, file, site.source ?? `built-in defaults (no ${policyFile})`, notes)),
      );
    }
    return "ok";
  } catch (error) {
    if (!(error instanceof PolicyRefused)) throw error;
    options.err.write(`${visibleBlock(error.message)}\n`);
    return error.rule === "site-policy-invalid" ? "invalid" : "refused";
  }
}

/** A task may be named by its SAM file or by its folder (which must hold exactly one SAM). */
function samFileOf(task: string, err: PlanOptions["err"]): string | undefined {
  let isDir: boolean;
  try {
    isDir = statSync(task).isDirectory();
  } catch {
    err.write(`scifi plan: no such file or folder: ${task}\n`);
    return undefined;
  }
  if (!isDir) return resolve(task);
  const found = findSamFiles(task);
  const main =
    found.find((f) => f === join(resolve(task), "task.md")) ?? (found.length === 1 ? found[0] : undefined);
  if (main === undefined) {
    err.write(`scifi plan: ${task} holds ${found.length} SAM files; name the one to plan\n`);
    return undefined;
  }
  return resolve(main);
}

function planNotes(sam: SamDocument, site: SitePolicy, policyFile: string, spec: SandboxSpec): PlanNotes {
  const summary = checkSummary(sam.root);
  const stages = `${summary.runStages} run stage(s) (the agent's work, no hidden assets), ${summary.compareStages} compare stage(s) (the runner's assets and declared outputs only); bash -o pipefail`;
  const reviewOnly = reviewOnlyLine(summary);
  const limits = effectiveLimits(sam);
  const notes: PlanNotes = {
    checks: reviewOnly ? `${stages}; ${reviewOnly}` : stages,
    reviewOnly: summary.reviewOnly,
    limits: {
      iterations: limits.iterations,
      budgetUsd: limits.usd,
      walltimeSec: spec.walltimeSec,
      allowCommands: sam.metadata.allowCommands ? [...sam.metadata.allowCommands] : null,
    },
  };
  if (spec.networkRules && requiredActions(sam.metadata.approval, site.approvalRequired).includes("network"))
    notes.hostApproval = `a host not on the list that the site's allowedHosts cover can be asked for at run time: the refusal files an approval request (at most ${MAX_PENDING_HOST_REQUESTS} pending), and once approved (scifi approve) the host is reachable from the work sandboxes for the rest of the run`;
  if (sam.metadata.jobs === "slurm") {
    try {
      notes.jobsNetwork = jobNetworkNote(sam.metadata, jobSandboxFor(sam, loadJobsPolicy(policyFile), site));
      if (
        sam.metadata.network &&
        requiredActions(sam.metadata.approval, site.approvalRequired).includes("network")
      )
        notes.jobsNetwork +=
          "; only once a person approves the run's network request (approval: [network]): pending or denied, a job has none";
    } catch (error) {
      notes.jobsNetwork = `unknown: ${(error as Error).message}`;
    }
  }
  return notes;
}
