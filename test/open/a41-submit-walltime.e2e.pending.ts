// Attack on `scifi ctl <run> limits --walltime` of a `scifi submit` run (real SLURM, real Docker,
// the scripted model: labelled, no real LLM), found by attacker a41. FAILS today.
// Doc promise: docs/ctl.md "limits": the wall time is raised and "the running run applies the
// change within a second: ... the deadline moves"; issue 41: "for direct runs and daemon tasks,
// from another shell or machine that shares the run folder"; issue 42: "a limit changed mid-run
// reaching every consumer". docs/slurm.md: a placed task's job gets `--time` = the SAM's walltime
// plus 5 minutes.
// What happened: a placed run (walltime 2m, job --time=0:07:00) is given `--walltime 3h`; ctl
// prints "walltimeSec 120 → 10800; the run applies it within a second", the run records the
// change, and the job's TimeLimit stays 00:07:00: SLURM ends the run at 7 minutes (SIGTERM, then
// SIGKILL), long before the deadline ctl reported. Nothing says so. (Likewise nothing checks a
// raise against the site policy's maxWalltime, which caps what a SAM may ask for.)
// Suggested fix: for a run inside a placement job (SLURM_JOB_ID in its environment, recorded in
// submit.json), raise the job's limit with `scontrol update JobId=... TimeLimit=...` when the run
// applies the change (refused on the history when SLURM refuses it: a user may not raise past the
// partition's limit), or refuse the raise in ctl naming the job's limit; and cap raises by the
// site policy's maxWalltime.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { CLI } from "../attack/a41-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, waitFor } from "../loop/harness.ts";

let jobId: string | undefined;
afterAll(() => {
  if (jobId) spawnSync("scancel", [jobId]);
});

function timeLimitSec(id: string): number {
  const text = execFileSync("scontrol", ["show", "job", id], { encoding: "utf8" });
  const limit = /TimeLimit=(\S+)/.exec(text)?.[1] ?? "";
  const [days, clock] = limit.includes("-") ? limit.split("-") : ["0", limit];
  const parts = (clock ?? "").split(":").map(Number);
  while (parts.length < 3) parts.unshift(0);
  const [h = 0, m = 0, s = 0] = parts;
  return Number(days) * 86400 + h * 3600 + m * 60 + s;
}

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))("a41: ctl walltime of a placed run", () => {
  it("a raised walltime moves the SLURM job's time limit with it", async () => {
    ensureImage();
    const root = mkdtempSync(join(tmpdir(), "a41-submit-"));
    const home = join(root, "home");
    mkdirSync(join(root, "task"), { recursive: true });
    mkdirSync(home);
    writeFileSync(
      join(root, "task", "task.md"),
      [
        "---",
        "name: a41-submit",
        "walltime: 2m",
        "allow_commands: [echo, test, sleep]",
        "---",
        "# A trivial task",
        "",
        "## To-do",
        "Write `out.txt`.",
        "",
        "## Expectation",
        "- `out.txt` exists.",
        "  ```check timeout=30s",
        "  test -f out.txt",
        "  ```",
        "",
      ].join("\n"),
    );
    const model = join(root, "model.yaml");
    writeFileSync(
      model,
      [
        "# Scripted (labelled): a slow first work reply, so ctl acts on a running placed run.",
        "prescan:",
        '  - json: { node: root, rank: 1, skills: [], context: "", plan: "write out.txt", direction: "write it" }',
        "work:",
        "  - delay_ms: 40000",
        '    tool_calls: [{ name: bash, input: { command: "echo ok > out.txt" } }]',
        '  - tool_calls: [{ name: report_done, input: { claim: "written", summary: "wrote out.txt" } }]',
        "review:",
        '  - json: { items: [{ id: root/e1, pass: true, evidence: "exists" }], findings: [], fixes: [], rank_adjustment: 0 }',
        "final_review:",
        "  - json: { group_suggestions: [], global_suggestions: [] }",
        "",
      ].join("\n"),
    );
    const env = { ...process.env, SCIFI_HOME: home };
    const submitted = execFileSync(
      process.execPath,
      [CLI, "submit", join(root, "task", "task.md"), "--model", `scripted:${model}`],
      { env, encoding: "utf8" },
    );
    jobId = /submitted job (\d+)/.exec(submitted)?.[1];
    expect(jobId, submitted).toBeDefined();
    const runId = await waitFor(() => {
      const runs = existsSync(join(home, "runs")) ? readdirSync(join(home, "runs")) : [];
      return runs[0] && existsSync(join(home, "runs", runs[0], "state.json")) ? runs[0] : undefined;
    }, 120_000);
    await new Promise((r) => setTimeout(r, 3000));
    const out = execFileSync(process.execPath, [CLI, "ctl", runId, "limits", "--walltime", "3h"], {
      env,
      encoding: "utf8",
    });
    expect(out).toContain("walltimeSec 120 → 10800");
    await waitFor(() => {
      const events = readHistory(join(home, "runs", runId, "history.jsonl"));
      return events.some((e) => e.type === "control") ? true : undefined;
    }, 30_000);
    // The run took it; the job that holds the run must allow it too.
    expect(timeLimitSec(jobId ?? "")).toBeGreaterThanOrEqual(10800);
  }, 300_000);
});
