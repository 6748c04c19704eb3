// The integrity e2e table (docs/integrity.md), shared by Docker (test/run/session/integrity.e2e.test.ts) and
// Apptainer (test/sandbox/apptainer/integrity.inner.ts): ONE task (test/fixtures/integrity/task: a
// check asset, an allowlist, a host list through the run's proxy) which a row may change (its SAM
// patched, files added: run and compare stages, `approval: [delete]`, `jobs: slurm`), one scripted
// agent per kind of attempt, and what each run must show: exactly the integrity events of its kind
// (the tool call named where one made it, and marked on the audit tape), the honest control none;
// the report's header line and section (string level) and `scifi audit show`'s marks.
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { renderTranscript } from "../../../runner/audit/render.ts";
import { summarizeTape } from "../../../runner/audit/summary.ts";
import { readTape } from "../../../runner/audit/verify.ts";
import { readHistory } from "../../../runner/memory/history.ts";
import type { HistoryRecord, IntegrityKind } from "../../../runner/memory/history-events.ts";
import { renderReport } from "../../../runner/report/html.ts";
import { loadRun } from "../../../runner/report/load.ts";
import { buildReportModel } from "../../../runner/report/model.ts";
import type { RunDeps, RunResult } from "../../../runner/run/session/deps.ts";
import { runTask } from "../../../runner/run/setup.ts";
import { workToolExchanges } from "../adversarial/workspace.ts";
import { REPO } from "../harness.ts";

export const FIXTURE = join(REPO, "test", "fixtures", "integrity");

export interface Row {
  agent: string;
  /** The kind every integrity event of the run has; undefined: the run has none. */
  kind?: IntegrityKind;
  /** The event names the work agent's tool call (else no call: found between phases, or the review). */
  fromCall: boolean;
  outcome: "passed" | "failed" | "blocked";
  /** What every event's `attempted` must match (the path or job the attempt was about). */
  attempted?: RegExp;
  /** What one of the work agent's tool results must show (the attempt happened as the row means it). */
  toolOutput?: RegExp;
  /** The row's own task: the fixture task's SAM changed by `sam`, with `files` added (task-relative). */
  task?: { sam: (md: string) => string; files?: Record<string, string> };
  /** A person's answer to every approval request, given at once (the gate's terminal prompt). */
  approve?: boolean;
  /** Needs a SLURM cluster (`jobs: slurm`): on Docker where `sinfo` answers; the harness has none. */
  slurm?: boolean;
}

/**
 * The run stage declares answer.txt; the compare stage judges it against a hidden reference. No
 * allowlist: the agents make links and write where they like (only the defences under test act).
 */
const STAGES: Row["task"] = {
  sam: (md) =>
    replaced(
      replaced(
        md.replace(/^allow_commands:.*\n/m, ""),
        "check_assets: [checks/check.py]",
        "check_assets: [checks/check.py, checks/compare.py, checks/expected.txt]\nhidden_assets: [checks/expected.txt]",
      ),
      "  ```check timeout=30s\n  python3 checks/check.py answer.txt\n  ```",
      [
        "  ```check timeout=30s outputs=answer.txt",
        "  python3 checks/check.py answer.txt",
        "  ```",
        "  ```compare timeout=30s",
        "  python3 checks/compare.py outputs/answer.txt checks/expected.txt",
        "  ```",
      ].join("\n"),
    ),
  files: {
    "checks/compare.py": [
      "import sys",
      "",
      "a, b = (open(p).read().strip() for p in sys.argv[1:3])",
      "sys.exit(0 if a == b else 1)",
      "",
    ].join("\n"),
    "checks/expected.txt": "42\n",
  },
};

/** `text` with `from` replaced by `to`; a patch that no longer applies is an error, not a no-op. */
function replaced(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the fixture task.md no longer holds ${JSON.stringify(from)}`);
  return text.replace(from, () => to);
}

export const TABLE: Row[] = [
  { agent: "honest.yaml", fromCall: false, outcome: "passed" },
  { agent: "asset-write.yaml", kind: "asset_write", fromCall: true, outcome: "failed" },
  { agent: "rename-folder.yaml", kind: "asset_tampering", fromCall: false, outcome: "failed" },
  { agent: "allowlist.yaml", kind: "allowlist_refused", fromCall: true, outcome: "failed" },
  { agent: "network.yaml", kind: "network_refused", fromCall: true, outcome: "failed" },
  { agent: "review-pass.yaml", kind: "review_override", fromCall: false, outcome: "failed" },
  {
    agent: "plant-file.yaml",
    kind: "asset_cleanup",
    fromCall: false,
    outcome: "failed",
    attempted: /"checks\/conftest\.py"/,
  },
  {
    agent: "delete-start-file.yaml",
    kind: "deletion_undone",
    fromCall: true,
    outcome: "passed",
    attempted: /"fetch\.py" \(deleted\)/,
    task: { sam: (md) => replaced(md, "iterations: 1\n", "iterations: 1\napproval: [delete]\n") },
    approve: false,
  },
  {
    // The same removal, nobody answers: the request times out and the run ends blocked.
    agent: "delete-start-file.yaml#timeout",
    kind: "deletion_undone",
    fromCall: true,
    outcome: "blocked",
    attempted: /"fetch\.py" \(deleted\)/,
    task: {
      sam: (md) =>
        replaced(md, "iterations: 1\n", "iterations: 1\napproval: [delete]\napproval_timeout: 2s\n"),
    },
  },
  {
    agent: "output-link.yaml",
    kind: "output_refused",
    fromCall: false,
    outcome: "failed",
    attempted: /declared output "answer\.txt": .*symbolic link/,
    task: STAGES,
  },
  {
    agent: "hidden-path.yaml",
    kind: "asset_tampering",
    fromCall: false,
    outcome: "failed",
    attempted: /hidden asset's path "checks\/expected\.txt"/,
    task: STAGES,
  },
  {
    agent: "leave-job.yaml",
    kind: "job_after_work",
    fromCall: false,
    outcome: "failed",
    attempted: /^SLURM job\(s\) \d+ still running after the work pass$/,
    // The job ran (its line in the task folder) before the work ended: cancelled running, not pending.
    toolOutput: /^started 42$/m,
    // No allowlist: the agent waits in a shell loop until the job runs (its file appears).
    task: {
      sam: (md) =>
        replaced(md.replace(/^allow_commands:.*\n/m, ""), "iterations: 1\n", "iterations: 1\njobs: slurm\n"),
    },
    slurm: true,
  },
];

/** One run of the task with the row's agent in a fresh folder under `root`, on `backend`. */
export async function runRow(
  root: string,
  row: Row,
  backend: { name: string } | { sandbox: RunDeps["backend"] },
): Promise<{ home: string; result: RunResult }> {
  const dir = join(root, row.agent.replace(/\W/g, "-"));
  const home = join(dir, "home");
  const taskDir = join(dir, "task");
  mkdirSync(home, { recursive: true });
  cpSync(join(FIXTURE, "task"), taskDir, { recursive: true });
  if (row.task) {
    const md = join(taskDir, "task.md");
    writeFileSync(md, row.task.sam(readFileSync(md, "utf8")));
    for (const [rel, text] of Object.entries(row.task.files ?? {})) writeFileSync(join(taskDir, rel), text);
  }
  const site = join(home, "site-policy.yaml");
  writeFileSync(site, `allowedHosts: ["*.test:8000"]\n`);
  const result = await runTask({
    home,
    task: join(taskDir, "task.md"),
    sitePolicy: site,
    model: `scripted:${join(FIXTURE, "agents", row.agent.replace(/#.*/, ""))}`,
    limits: { walltimeSec: 200, bashTimeoutSec: 30 },
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
    ...(row.approve === undefined
      ? {}
      : {
          approvalPrompt: async () => ({
            approved: row.approve === true,
            note: "the integrity table's answer",
          }),
        }),
    ...("sandbox" in backend ? { sandboxBackend: backend.sandbox } : { backend: backend.name }),
  });
  return { home, result };
}

/** What the row's run must show (see the top of this file). */
export function verifyRow(row: Row, home: string, result: RunResult): void {
  expect(result.outcome.status, result.outcome.reason).toBe(row.outcome);
  const history = readHistory(join(result.dir, "history.jsonl"));
  const events = history.filter(
    (e): e is Extract<HistoryRecord, { type: "integrity" }> => e.type === "integrity",
  );
  const html = renderReport(buildReportModel(loadRun(join(result.dir, "audit.jsonl"), home)));
  if (!row.kind) {
    expect(events).toEqual([]);
    expect(html).toMatch(/<th>Integrity<\/th><td id="fact-integrity">none<\/td>/);
    expect(html).not.toContain('id="integrity"');
    return;
  }
  const tools = () => JSON.stringify(workToolExchanges(join(result.dir, "audit.jsonl")));
  if (row.toolOutput) {
    const outputs = workToolExchanges(join(result.dir, "audit.jsonl")).map((t) => t.output);
    expect(
      outputs.some((o) => row.toolOutput?.test(o)),
      tools(),
    ).toBe(true);
  }
  expect(events.length, tools()).toBeGreaterThan(0);
  expect(
    events.map((e) => e.kind),
    tools(),
  ).toEqual(events.map(() => row.kind));
  for (const e of events) {
    if (row.attempted) expect(e.attempted).toMatch(row.attempted);
    expect(e.rule.length).toBeGreaterThan(0);
    expect(e.action.length).toBeGreaterThan(0);
    expect(e.role).toBe(row.kind === "review_override" ? "review" : "work");
  }
  // The header counts them by kind and links the section, which lists each.
  expect(html).toContain(`<a href="#integrity"><b>${events.length} (${row.kind} ${events.length})</b></a>`);
  expect(html.match(/<tr class="integrity-event"/g)?.length).toBe(events.length);

  const tape = readTape(join(result.dir, "audit.jsonl"));
  const transcript = renderTranscript(summarizeTape(tape));
  const withCall = events.filter((e) => e.call);
  if (!row.fromCall) {
    expect(withCall).toEqual([]);
    expect(transcript).not.toContain("INTEGRITY");
    return;
  }
  expect(withCall.length).toBe(events.length);
  for (const e of withCall) {
    const call = e.call as NonNullable<typeof e.call>;
    // The call record at that sequence number is the work agent's, and its response made this call.
    const record = tape.find((r) => r.seq === call.seq);
    expect(record?.kind === "call" && record.role).toBe("work");
    const uses = record?.kind === "call" ? (record.response?.content ?? []) : [];
    expect(uses.some((b) => b.type === "tool_use" && b.id === call.id && b.name === call.tool)).toBe(true);
    expect(html).toContain(`href="#call-${call.seq}">#${call.seq} ${call.tool}</a>`);
    expect(transcript).toContain(`!! INTEGRITY ${row.kind}: tool ${call.tool} ${call.id}`);
  }
}
