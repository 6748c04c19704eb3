// Attacks on issue 41's `scifi ctl` on live runs that held (attacker a41; real Docker, a priced
// scripted model served from this process: labelled, no real LLM): three processes resuming one
// paused run at once, SIGTERM to `scifi run` while a pause it was asked for is still pending, and a
// wall time lowered under a command the agent meant to outlive the deadline, and a hidden asset
// across a pause and resume (put back while paused, hidden again from the resumed work pass);
// SIGTERM to `scifi ctl <run> resume`, which is the resumed run; a replay of a paused and resumed run.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, waitFor } from "../loop/harness.ts";
import { CLI, cli, containersOf, pricedTask, readState, startRun } from "./a41-run.ts";

async function server() {
  const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
  return ScriptedServer.start(fixture("ctl-priced.yaml"));
}

describe.skipIf(!hasEngine("docker"))("a41 held: ctl on live runs (docker, scripted model)", () => {
  it("two `ctl resume` and a `scifi run --resume` of one paused run: one drives it, once", async () => {
    ensureImage();
    const model = await server();
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
      const pause = await cli(home, ["ctl", run.runId, "pause", "--wait"]);
      expect(pause.code, pause.stderr).toBe(0);
      expect((await run.exit).code).toBe(5);

      const all = await Promise.all([
        cli(home, ["ctl", run.runId, "resume"]),
        cli(home, ["ctl", run.runId, "resume"]),
        cli(home, ["run", "--resume", run.runId, "--models-config", models]),
      ]);
      const winners = all.filter((r) => r.code === 0);
      expect(winners, JSON.stringify(all.map((r) => [r.code, r.stderr.slice(-300)]))).toHaveLength(1);
      expect(winners[0]?.stdout).toContain("PASSED");
      // The others were refused by name, not half-run.
      for (const r of all.filter((x) => x.code !== 0))
        expect(r.stderr).toMatch(
          /being driven by another scifi process|still holds it|is not paused|already ended/,
        );
      const state = readState(run.runDir);
      expect(state.outcome?.status).toBe("passed");
      expect(state.resumes).toBe(1);
      const history = readHistory(join(run.runDir, "history.jsonl"));
      expect(history.filter((e) => e.type === "run_end")).toHaveLength(1);
      expect(history.filter((e) => e.type === "resumed")).toHaveLength(1);
      expect(containersOf(run.runId)).toEqual([]);
    } finally {
      await model.close();
    }
  }, 600_000);

  it("SIGTERM while a pause is pending: exit 143, sandbox gone, resumable; the pause is taken on resume", async () => {
    ensureImage();
    const model = await server();
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
      // The work reply takes 15 s: the pause waits for the phase's end; the signal does not.
      const pause = await cli(home, ["ctl", run.runId, "pause"]);
      expect(pause.code, pause.stderr).toBe(0);
      await waitFor(() => (containersOf(run.runId).length > 0 ? true : undefined), 60_000);
      run.child.kill("SIGTERM");
      const exit = await run.exit;
      expect(exit.code, run.out()).toBe(143);
      expect(containersOf(run.runId)).toEqual([]);
      const state = readState(run.runDir);
      expect(state.paused).toBeUndefined();
      expect(state.outcome).toBeUndefined();
      // The pause was asked and never taken: the resumed run takes it at its first boundary.
      const resumed = await cli(home, ["run", "--resume", run.runId, "--models-config", models]);
      expect(resumed.code, resumed.stderr).toBe(5);
      expect(resumed.stdout).toContain("PAUSED after phase prescan");
      expect(readState(run.runDir).paused).toMatchObject({ phase: "prescan" });
      expect(containersOf(run.runId)).toEqual([]);
      execFileSync(process.execPath, [CLI, "status"], { env: { ...process.env, SCIFI_HOME: home } });
    } finally {
      await model.close();
    }
  }, 600_000);
});

describe.skipIf(!hasEngine("docker"))("a41 held: a command in flight when ctl moves the deadline", () => {
  it("walltime lowered under a running `sleep 120`: the command is cut at the new deadline, the run fails on it", async () => {
    ensureImage();
    const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
    const script = join(mkdtempSync(join(tmpdir(), "a41-sleep-")), "sleep.yaml");
    writeFileSync(
      script,
      [
        "# Scripted (labelled): the agent starts a command meant to outlive the run's deadline.",
        "prescan:",
        '  - json: { node: root, rank: 1, skills: [], context: "", plan: "wait", direction: "wait" }',
        "work:",
        '  - tool_calls: [{ name: bash, input: { command: "sleep 120" } }]',
        "  - tool_calls: [{ name: report_done, input: { claim: waited, summary: waited } }]",
        "",
      ].join("\n"),
    );
    const model = await ScriptedServer.start(script);
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      await waitFor(() => (containersOf(run.runId).length > 0 ? true : undefined), 120_000);
      // The sleep is running: give the run 20 s more than it has used.
      await new Promise((r) => setTimeout(r, 3000));
      const used = readState(run.runDir).spent.elapsedMs;
      const since = Date.now() - Date.parse(readState(run.runDir).spent.at ?? new Date().toISOString());
      const walltime = Math.ceil((used + since) / 1000) + 20;
      const t0 = Date.now();
      const lowered = await cli(home, ["ctl", run.runId, "limits", "--walltime", `${walltime}s`]);
      expect(lowered.code, lowered.stderr).toBe(0);
      const exit = await run.exit;
      expect(exit.code, run.out()).toBe(1);
      expect(Date.now() - t0).toBeLessThan(60_000);
      const state = readState(run.runDir);
      expect(state.outcome?.reason).toMatch(/wall time limit reached/);
      expect(containersOf(run.runId)).toEqual([]);
    } finally {
      await model.close();
    }
  }, 600_000);
});

describe.skipIf(!hasEngine("docker"))(
  "a41 held: a pause puts the hidden asset back; the resume hides it again",
  () => {
    it("the agent's work pass after a resume cannot read the hidden asset", async () => {
      ensureImage();
      const { ScriptedServer } = await import("../../runner/llm/scripted/server.ts");
      const root = mkdtempSync(join(tmpdir(), "a41-hidden-"));
      const secret = "a41-secret-7f3c9e";
      mkdirSync(join(root, "task", "checks"), { recursive: true });
      writeFileSync(join(root, "task", "checks", "secret.txt"), `${secret}\n`);
      writeFileSync(
        join(root, "task", "task.md"),
        [
          "---",
          "name: a41-hidden",
          "iterations: 2",
          "hidden_assets: [checks/secret.txt]",
          "allow_commands: [echo, test, cat, ls, sleep]",
          "---",
          "# Write the answer",
          "",
          "## To-do",
          "Write `answer.txt`.",
          "",
          "## Expectation",
          "- `answer.txt` holds the hidden value.",
          "  ```check timeout=30s outputs=answer.txt",
          "  test -f answer.txt",
          "  ```",
          "  ```compare timeout=30s",
          "  cmp outputs/answer.txt checks/secret.txt",
          "  ```",
          "",
        ].join("\n"),
      );
      const prescan =
        '  - json: { node: root, rank: 1, skills: [], context: "", plan: "write it", direction: "write it" }';
      const review =
        '  - json: { items: [{ id: root/e1, pass: false, evidence: "differs" }], findings: [], fixes: [], rank_adjustment: 0 }';
      const script = join(root, "model.yaml");
      writeFileSync(
        script,
        [
          "# Scripted (labelled): iteration 1 writes a wrong answer (paused after it); iteration 2, after",
          "# the resume, tries to read the hidden asset.",
          "prescan:",
          prescan,
          prescan,
          prescan,
          "work:",
          "  - delay_ms: 12000",
          '    tool_calls: [{ name: bash, input: { command: "echo wrong > answer.txt" } }]',
          "  - tool_calls: [{ name: report_done, input: { claim: written, summary: written } }]",
          '  - tool_calls: [{ name: bash, input: { command: "ls -la checks; cat checks/secret.txt" } }]',
          "  - tool_calls: [{ name: report_done, input: { claim: tried, summary: tried } }]",
          "review:",
          review,
          review,
          review,
          "final_review:",
          "  - json: { group_suggestions: [], global_suggestions: [] }",
          "",
        ].join("\n"),
      );
      const model = await ScriptedServer.start(script);
      try {
        const { home, models } = pricedTask(model.baseURL);
        const task = join(root, "task", "task.md");
        const run = await startRun(home, [task, "--models-config", models]);
        await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
        // While the work pass runs, the hidden asset is out of the task folder.
        expect(existsSync(join(root, "task", "checks", "secret.txt"))).toBe(false);
        const pause = await cli(home, ["ctl", run.runId, "pause", "--wait"]);
        expect(pause.code, pause.stderr).toBe(0);
        expect((await run.exit).code, run.out()).toBe(5);
        // Paused: the user's folder is whole again.
        expect(readFileSync(join(root, "task", "checks", "secret.txt"), "utf8")).toBe(`${secret}\n`);

        const resumed = await cli(home, ["ctl", run.runId, "resume"]);
        expect(resumed.code, resumed.stdout + resumed.stderr).toBe(1);
        const tape = readFileSync(join(run.runDir, "audit.jsonl"), "utf8");
        // The resumed pass ran its `cat` (on the tape) and got no secret.
        expect(tape).toContain("cat checks/secret.txt");
        const workOutputs = tape
          .split("\n")
          .filter((l) => l.includes('"role":"work"'))
          .join("\n");
        expect(workOutputs).not.toContain(secret);
        expect(readFileSync(join(root, "task", "checks", "secret.txt"), "utf8")).toBe(`${secret}\n`);
      } finally {
        await model.close();
      }
    }, 600_000);
  },
);

describe.skipIf(!hasEngine("docker"))(
  "a41 held: SIGTERM to `scifi ctl <run> resume` (the resumed run)",
  () => {
    it("ends the resumed run as SIGTERM ends `scifi run`: exit 143, sandbox gone, resumable", async () => {
      ensureImage();
      const model = await server();
      try {
        const { home, task, models } = pricedTask(model.baseURL);
        const run = await startRun(home, [task, "--models-config", models]);
        await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
        // Paused after its work phase; the resumed run starts a sandbox for its checks.
        const pause = await cli(home, ["ctl", run.runId, "pause"]);
        expect(pause.code, pause.stderr).toBe(0);
        expect((await run.exit).code).toBe(5);
        expect(readState(run.runDir).paused).toBeDefined();

        const resume = spawn(process.execPath, [CLI, "ctl", run.runId, "resume"], {
          env: { ...process.env, SCIFI_HOME: home, SCIFI_CTL_POLL_MS: "200" },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        resume.stdout?.on("data", (d: Buffer) => {
          out += d.toString();
        });
        resume.stderr?.on("data", (d: Buffer) => {
          out += d.toString();
        });
        const exited = new Promise<number | null>((r) => resume.once("exit", (code) => r(code)));
        await waitFor(() => (containersOf(run.runId).length > 0 ? true : undefined), 120_000);
        resume.kill("SIGTERM");
        expect(await exited, out).toBe(143);
        expect(containersOf(run.runId)).toEqual([]);
        const state = readState(run.runDir);
        expect(state.outcome).toBeUndefined();
        expect(state.phase).not.toBe("ended");
        expect(out).toContain(`--resume ${run.runId}`);
      } finally {
        await model.close();
      }
    }, 600_000);
  },
);

describe.skipIf(!hasEngine("docker"))("a41 held: replay of a paused and resumed run", () => {
  it("answers every recorded call with the same verdict (no limits changed)", async () => {
    ensureImage();
    const model = await server();
    try {
      const { home, task, models } = pricedTask(model.baseURL);
      const run = await startRun(home, [task, "--models-config", models]);
      await waitFor(() => (readState(run.runDir).phase === "prescan" ? true : undefined), 120_000);
      const pause = await cli(home, ["ctl", run.runId, "pause", "--wait"]);
      expect(pause.code, pause.stderr).toBe(0);
      expect((await run.exit).code).toBe(5);
      const resumed = await cli(home, ["ctl", run.runId, "resume"]);
      expect(resumed.code, resumed.stderr).toBe(0);
      const replay = await cli(home, ["run", task, "--model", `replay:${run.runId}`]);
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toContain("PASSED");
    } finally {
      await model.close();
    }
  }, 600_000);
});
