// The human form of a resolved sandbox spec, as `scifi plan` prints it: one granted thing a line.
// Policy only; what a run adds beyond the spec (runtime host approval, the jobs' network) comes in
// as notes from the composition above (runner/cli/plan-task.ts).
import { formatBytes, formatSeconds } from "./resolve.ts";
import type { SandboxSpec } from "./spec.ts";

/** What the spec alone does not say: hosts approvable at run time, and the network of agent jobs. */
export interface PlanNotes {
  /** A host not on the list can be approved at run time (`network` in approval, with a host list). */
  hostApproval?: string;
  /** The network of the SLURM jobs the agent submits (`jobs: slurm`). */
  jobsNetwork?: string;
  /** The checks: run and compare stages, and the items the review alone judges. */
  checks?: string;
  reviewOnly?: { id: string; text: string }[];
  /** The run's limits and the work agent's command allowlist, as the run applies them. */
  limits?: { iterations: number; budgetUsd: number; walltimeSec: number; allowCommands: string[] | null };
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
    ...(notes.checks ? [["checks", notes.checks] as [string, string]] : []),
    ["gpus", spec.gpus > 0 ? String(spec.gpus) : "none"],
    ["cpus", String(spec.cpus)],
    ["memory", `${formatBytes(spec.memoryBytes)} (no swap)`],
    ["processes", `at most ${spec.pidsLimit}`],
    // Seconds first, as the report and state.json say it; the SAM's form after it.
    ["wall time", `${spec.walltimeSec} s (${formatSeconds(spec.walltimeSec)})`],
    ...(notes.limits
      ? ([
          ["iterations", `at most ${notes.limits.iterations}`],
          ["budget", `USD ${notes.limits.budgetUsd.toFixed(2)}`],
          [
            "commands",
            notes.limits.allowCommands
              ? `only ${notes.limits.allowCommands.join(", ")} (allow_commands)`
              : "no allow_commands: the site policy decides",
          ],
        ] as [string, string][])
      : []),
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
