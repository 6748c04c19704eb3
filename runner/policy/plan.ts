// The work behind `scifi plan <task>`: parse the SAM, load the site policy, resolve the spec and
// print exactly what a run would be granted (human or JSON). No container is started.
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import { requiredActions } from "../approval/actions.ts";
import { loadJobsPolicy } from "../jobs/policy.ts";
import { jobNetworkNote, jobSandboxFor } from "../jobs/run-jobs.ts";
import { MAX_PENDING_HOST_REQUESTS } from "../network/approve-hosts.ts";
import { scifiHome } from "../paths.ts";
import { newRunId } from "../run-id.ts";
import { formatDiagnostic } from "../sam/diagnostics.ts";
import { findSamFiles } from "../sam/discover.ts";
import { parseSamSync } from "../sam/parse.ts";
import type { SamDocument } from "../sam/types.ts";
import { PolicyRefused } from "./refused.ts";
import { formatBytes, formatSeconds, resolveSpec } from "./resolve.ts";
import { loadSitePolicy, type SitePolicy, sitePolicyPath } from "./site.ts";
import type { SandboxSpec } from "./spec.ts";

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
  const parsed = parseSamSync(file);
  if (!parsed.ok) {
    for (const d of parsed.diagnostics) options.err.write(`${formatDiagnostic(d)}\n`);
    return "invalid";
  }
  const home = scifiHome(env);
  const policyFile = sitePolicyPath(home, options.sitePolicy, env);
  try {
    const site = loadSitePolicy(policyFile, Boolean(options.sitePolicy || env.SCIFI_SITE_POLICY));
    const spec = resolveSpec(parsed.sam, site.policy, { home, runId: newRunId(parsed.sam.metadata.name) });
    const notes = planNotes(parsed.sam, site.policy, policyFile, spec);
    if (options.json) {
      options.out.write(
        `${JSON.stringify({ task: file, sitePolicy: site.source ?? null, spec, ...notes }, null, 2)}\n`,
      );
    } else {
      options.out.write(
        describeSpec(spec, file, site.source ?? `built-in defaults (no ${policyFile})`, notes),
      );
    }
    return "ok";
  } catch (error) {
    if (!(error instanceof PolicyRefused)) throw error;
    options.err.write(`${error.message}\n`);
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

function networkLine(spec: SandboxSpec): string {
  if (spec.network) {
    const open = spec.openNetwork;
    const keptOut = open?.rules.allowedPrivateRanges.length
      ? `private addresses and this host's own refused except ${open.rules.allowedPrivateRanges.join(", ")}`
      : "private, loopback and link-local addresses and this host's own refused";
    const apptainer = open?.apptainerHostNetwork
      ? "Apptainer: the host's network (site apptainerHostNetwork)"
      : "Apptainer: through the run's proxy to any public host (HTTP and HTTPS)";
    return `ON (granted by the SAM). Docker: a network of the run's own (not the default bridge); ${apptainer}; ${keptOut}${open?.rules.deny.length ? `; denied by the site: ${open.rules.deny.join(", ")}` : ""}`;
  }
  const r = spec.networkRules;
  if (!r) return "off";
  const parts = [`only through the run's proxy to ${r.allow.join(", ")} (no port: 80 and 443)`];
  if (r.deny.length) parts.push(`denied by the site: ${r.deny.join(", ")}`);
  parts.push(
    r.allowedPrivateRanges.length
      ? `private addresses refused except ${r.allowedPrivateRanges.join(", ")}`
      : "private, loopback and link-local addresses refused",
  );
  return parts.join("; ");
}

/** What the spec alone does not say: hosts approvable at run time, and the network of agent jobs. */
export interface PlanNotes {
  /** A host not on the list can be approved at run time (`network` in approval, with a host list). */
  hostApproval?: string;
  /** The network of the SLURM jobs the agent submits (`jobs: slurm`). */
  jobsNetwork?: string;
}

function planNotes(sam: SamDocument, site: SitePolicy, policyFile: string, spec: SandboxSpec): PlanNotes {
  const notes: PlanNotes = {};
  if (spec.networkRules && requiredActions(sam.metadata.approval, site.approvalRequired).includes("network"))
    notes.hostApproval = `a host not on the list that the site's allowedHosts cover can be asked for at run time: the refusal files an approval request (at most ${MAX_PENDING_HOST_REQUESTS} pending), and once approved (scifi approve) the host is reachable from the work sandboxes for the rest of the run`;
  if (sam.metadata.jobs === "slurm") {
    try {
      notes.jobsNetwork = jobNetworkNote(sam.metadata, jobSandboxFor(sam, loadJobsPolicy(policyFile), site));
    } catch (error) {
      notes.jobsNetwork = `unknown: ${(error as Error).message}`;
    }
  }
  return notes;
}

/** The human form: one granted thing a line, so a scientist can read what the run will get. */
export function describeSpec(
  spec: SandboxSpec,
  file: string,
  policySource: string,
  notes: PlanNotes = {},
): string {
  const rows: [string, string][] = [
    ["site policy", policySource],
    ["image", spec.image],
    ["run as", `uid ${spec.user.uid}, gid ${spec.user.gid}`],
    ["network", networkLine(spec)],
    ...(notes.hostApproval ? [["", `(approval: network) ${notes.hostApproval}`] as [string, string]] : []),
    ...(notes.jobsNetwork
      ? [["jobs", `SLURM (submit_job); network: ${notes.jobsNetwork}`] as [string, string]]
      : []),
    ["gpus", spec.gpus > 0 ? String(spec.gpus) : "none"],
    ["cpus", String(spec.cpus)],
    ["memory", `${formatBytes(spec.memoryBytes)} (no swap)`],
    ["processes", `at most ${spec.pidsLimit}`],
    ["wall time", formatSeconds(spec.walltimeSec)],
    ["scratch", spec.scratch ? `${formatBytes(spec.scratch.sizeBytes)} at ${spec.scratch.target}` : "none"],
    [
      "task folder",
      spec.taskFolderQuota
        ? `may grow by at most ${formatBytes(spec.taskFolderQuota.maxAddBytes)} (maxTaskFolder)`
        : "no size limit",
    ],
  ];
  const lines = [`Plan for ${file}`, `run id ${spec.runId} (each run gets a fresh one)`, ""];
  for (const [k, v] of rows) lines.push(`  ${k.padEnd(12)} ${v}`);
  lines.push("", "  mounts (nothing else of the host is visible):");
  const width = Math.max(...spec.mounts.map((m) => m.target.length));
  for (const m of spec.mounts) {
    lines.push(`    ${m.readOnly ? "ro" : "rw"}  ${m.target.padEnd(width)}  <- ${m.source}  (${m.reason})`);
  }
  lines.push("", "  environment (no host variables, no secrets):");
  for (const [k, v] of Object.entries(spec.env)) lines.push(`    ${k}=${v}`);
  return `${lines.join("\n")}\n`;
}
