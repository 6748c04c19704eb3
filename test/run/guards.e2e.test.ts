// Agents that cheat, loop or fail are caught by the runner, not by the prompt. Real Docker sandbox,
// real checks, scripted models over HTTP.
import { execFile } from "node:child_process";
import { appendFileSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { parseEntries, readMemory } from "../../runner/memory/entries.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { sha256 } from "../../runner/sha256.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, REPO, runScripted, workspace } from "./harness.ts";

const exec = promisify(execFile);

describe.skipIf(!hasEngine("docker"))(
  "the runner catches what the agent does wrong",
  { timeout: 900_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("claiming done without the work fails the checks, even when the review says pass", async () => {
      const ws = workspace("verilator-counter-debug", { iterations: 1 });
      const { result, history } = await runScripted(ws, "verilator-claim-only.yaml");
      expect(result.outcome.status).toBe("failed");
      expect(result.outcome.reason).toMatch(/iteration limit reached: 1 failed attempts at node root/);
      // The run stage simulates the unfixed design; the compare stage fails its trace.
      expect(result.outcome.reason).toContain("failed checks: root/check-2");
      const verdict = history.find((e) => e.type === "verdict");
      expect(verdict).toMatchObject({ passed: false, checksPassed: false });
      // The review's "pass" is recorded but does not overrule the check.
      expect(verdict?.type === "verdict" && verdict.items.every((i) => i.pass)).toBe(true);
    });

    it("writing the expected output with wrong content fails the review and the checks", async () => {
      const ws = workspace("gfortran-build-run", { iterations: 1 });
      const { result, history } = await runScripted(ws, "gfortran-wrong-content.yaml");
      expect(result.outcome.status).toBe("failed");
      const checks = history.flatMap((e) => (e.type === "check" ? [[e.check, e.passed]] : []));
      expect(checks).toEqual([
        ["root/check-1", true],
        ["root/check-2", true],
        ["root/check-3", true],
        ["root/check-4", false],
      ]);
      expect(history.find((e) => e.type === "verdict")).toMatchObject({
        passed: false,
        items: [
          { id: "root/e1", pass: true },
          { id: "root/e2", pass: false },
          { id: "root/e3", pass: true },
        ],
      });
      const memory = parseEntries(readFileSync(join(result.dir, "memory.md"), "utf8"));
      expect(memory).toHaveLength(1);
      expect(memory[0]?.body).toContain("Write results/stats.txt by running ./stats data/values.txt.");
    });

    it("an agent editing the SAM is refused, and a SAM changed during the run fails it as tampering", async () => {
      const ws = workspace("verilator-counter-debug");
      const original = hashFile(ws.sam);
      let unchangedByAgent: boolean | undefined;
      const { result, history } = await runScripted(ws, "verilator-edit-sam.yaml", {
        onStatus: (s) => {
          if (s.phase === "work" && s.toolCalls >= 2 && unchangedByAgent === undefined) {
            unchangedByAgent = hashFile(ws.sam) === original;
            appendFileSync(ws.sam, "\n<!-- changed behind the runner's back -->\n");
          }
        },
      });
      expect(unchangedByAgent).toBe(true);
      expect(result.outcome.status).toBe("failed");
      expect(result.outcome.reason).toMatch(
        /SAM file .*task\.md changed during the run: changed content .*tampering/,
      );
      expect(history.find((e) => e.type === "tampering")).toMatchObject({
        file: realpathSync(ws.sam),
        expected: original,
        problem: expect.stringContaining("changed content"),
      });
      expect(history.some((e) => e.type === "verdict")).toBe(false); // no review of a tampered SAM
      const errors = toolErrors(join(result.dir, "audit.jsonl"));
      expect(errors).toHaveLength(2);
    });

    it("an agent editing a check asset is refused, and an asset changed during the run is caught before the check", async () => {
      const ws = workspace("verilator-counter-debug");
      const asset = join(ws.taskDir, "checks/run_tb.sh");
      const original = hashFile(asset);
      let unchangedByAgent: boolean | undefined;
      const { result, history } = await runScripted(ws, "verilator-edit-asset.yaml", {
        onStatus: (s) => {
          if (s.phase === "work" && s.toolCalls >= 2 && unchangedByAgent === undefined) {
            unchangedByAgent = hashFile(asset) === original;
            appendFileSync(asset, "exit 0\n");
          }
        },
      });
      expect(unchangedByAgent).toBe(true);
      expect(result.outcome.status).toBe("failed");
      expect(result.outcome.reason).toMatch(/check asset .*run_tb\.sh changed during the run/);
      expect(history.some((e) => e.type === "check")).toBe(false); // caught before the first check ran
      expect(hashFile(asset)).toBe(original); // and put back from the runner's copy
      expect(toolErrors(join(result.dir, "audit.jsonl"))).toHaveLength(2);
    });

    it("a looping agent is stopped by the repeat limit", async () => {
      const ws = workspace("verilator-counter-debug");
      const { result, history } = await runScripted(ws, "verilator-looping.yaml");
      const hits = history.filter((e) => e.type === "limit" && e.limit === "tool_call");
      expect(hits).toHaveLength(2);
      expect(hits[0]).toMatchObject({ detail: expect.stringContaining("already ran 2 times") });
      expect(result.outcome.status).toBe("blocked");
    });

    it("a failing agent is told to report a blocker, and `scifi run` exits 3", async () => {
      const ws = workspace("verilator-counter-debug");
      const cli = await exec(
        process.execPath,
        [
          join(REPO, "bin/scifi.js"),
          "run",
          ws.taskDir,
          "--model",
          `scripted:${fixture("verilator-failing.yaml")}`,
        ],
        { env: { ...process.env, SCIFI_HOME: ws.home }, timeout: 300_000 },
      ).then(
        () => ({ code: 0, stdout: "" }),
        (error: { code: number; stdout: string }) => ({ code: error.code, stdout: error.stdout }),
      );
      expect(cli.code).toBe(3);
      expect(cli.stdout).toMatch(
        /^BLOCKED: the work agent reported a blocker: Verilator rejects every invocation/,
      );
      const [runId] = readdirSync(join(ws.home, "runs"));
      const history = readHistory(join(ws.home, "runs", String(runId), "history.jsonl"));
      expect(history.find((e) => e.type === "limit" && e.limit === "failing_steps")).toMatchObject({
        detail: "3 consecutive steps failed; the agent is told to report a blocker",
      });
      expect(history.at(-1)).toMatchObject({ type: "run_end", outcome: "blocked" });
      const group = readFileSync(join(ws.home, "memory/groups/rtl-debugging.md"), "utf8");
      expect(group).toContain("Check the Verilator installation");
    });

    it("the second iteration's pre-scan gets the first review's fixes, and the tape records the injection", async () => {
      const ws = workspace("verilator-counter-debug");
      const { result, history } = await runScripted(ws, "verilator-two-iterations.yaml");
      expect(result.outcome.status).toBe("passed");
      expect(result.iterations).toBe(2);
      expect(history.filter((e) => e.type === "direction_change")).toHaveLength(1);
      const tape = readTape(join(result.dir, "audit.jsonl"));
      const injected = tape.filter((r) => r.kind === "injected");
      expect(injected).toHaveLength(2); // the iteration-2 pre-scan and the final review read task memory
      expect(injected[0]).toMatchObject({
        role: "prescan",
        source: "memory",
        ref: `memory:task:${result.runId}`,
      });
      // The hash is of the text the pre-scan read: the task memory as agents see it (no times, no ids).
      const memory = readMemory(join(result.dir, "memory.md"));
      expect(memory).toContain("Set LAST to WIDTH'(N - 1) in rtl/counter.v");
      const { createHash } = await import("node:crypto");
      expect(injected[0]?.kind === "injected" && injected[0].sha256).toBe(
        createHash("sha256").update(memory).digest("hex"),
      );
      // The call right after the injection record is that pre-scan, and its prompt holds the fix.
      const next = tape[tape.indexOf(injected[0] as (typeof tape)[number]) + 1];
      expect(JSON.stringify(next)).toContain("Set LAST to WIDTH'(N - 1) in rtl/counter.v");
    });
  },
);

/** Tool results the model saw as errors, from the audit tape's last work request. */
function toolErrors(tapeFile: string): string[] {
  const calls = readTape(tapeFile).flatMap((r) => (r.kind === "call" && r.role === "work" ? [r] : []));
  const last = JSON.stringify(calls.at(-1)?.request ?? {});
  return [...last.matchAll(/"isError":true/g)].map((m) => m[0]);
}

function hashFile(file: string): string {
  return sha256(readFileSync(file));
}
