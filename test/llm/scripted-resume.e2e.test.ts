// A resumed run with the same scripted model continues each role's queue where the run stood
// (the real CLI, SIGKILL, Docker): killed in iteration 2's work pass, `--resume` with the same script
// gets iteration 2's work replies again (the pass is made again from its checkpoint), and the
// review's second reply, not the queues' first ones; the run passes.
import { execFile, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { hasEngine } from "../helpers/engines.ts";
import { callCount, ensureImage, fixture, killChild, REPO, waitFor, workspace } from "../run/harness.ts";
import { writeScript } from "./helpers.ts";

const exec = promisify(execFile);

describe.skipIf(!hasEngine("docker"))("a scripted run resumed with the same script (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("continues each role's queue where the run stood", { timeout: 600_000 }, async () => {
    const ws = workspace("verilator-counter-debug");
    // Iteration 2's first work reply comes late, so the run can be killed while waiting for it.
    const script = writeScript(
      readFileSync(fixture("verilator-two-iterations.yaml"), "utf8").replace(
        `  - expect: "Set LAST to WIDTH'(N - 1)"\n    tool_calls:`,
        `  - expect: "Set LAST to WIDTH'(N - 1)"\n    delay_ms: 4000\n    tool_calls:`,
      ),
      "two-iterations.yaml",
    );
    expect(readFileSync(script, "utf8")).toContain("delay_ms: 4000");
    const env = { ...process.env, SCIFI_HOME: ws.home };
    const scifi = join(REPO, "bin/scifi.js");
    const first = spawn(process.execPath, [scifi, "run", ws.sam, "--model", `scripted:${script}`], {
      env,
      stdio: "ignore",
    });
    const runDir = await waitFor(() => {
      const runs = existsSync(join(ws.home, "runs")) ? readdirSync(join(ws.home, "runs")) : [];
      return runs[0] ? join(ws.home, "runs", runs[0]) : undefined;
    });
    const tape = join(runDir, "audit.jsonl");
    // Iteration 1 (pre-scan, work, review) and iteration 2's pre-scan are on the tape.
    await waitFor(() => (callCount(tape) >= 4 ? true : undefined));
    await new Promise((r) => setTimeout(r, 1000));
    await killChild(first);
    expect(callCount(tape)).toBe(4);

    const runId = runDir.split("/").at(-1) ?? "";
    const resumed = await exec(
      process.execPath,
      [scifi, "run", "--resume", runId, "--model", `scripted:${script}`],
      {
        env,
        timeout: 300_000,
      },
    ).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string; stderr: string }) => ({
        code: e.code,
        out: `${e.stdout}${e.stderr}`,
      }),
    );
    expect(resumed.out).toMatch(/^PASSED/);
    expect(resumed.code).toBe(0);
    const calls = readTape(tape).filter((r): r is CallRecord => r.kind === "call");
    // After the resume: iteration 2's work (edit, report done), its review, the final review.
    expect(calls.slice(4).map((c) => [c.role, c.iteration])).toEqual([
      ["work", 2],
      ["work", 2],
      ["review", 2],
      ["final_review", 2],
    ]);
    expect(calls.every((c) => !c.error)).toBe(true);
  });
});
