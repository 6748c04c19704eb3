// Evidence where a person decides: the `finish` request (and the terminal prompt and `scifi
// approvals` that render it) and the run report show each check's stage, exit code, duration,
// sandbox and output tail, a compare stage's too (withheld from the agents, not from people), with
// agent text escaped. No engine needed.
import { appendFileSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { renderRequest } from "../../runner/approval/render.ts";
import type { ApprovalRequest } from "../../runner/approval/store.ts";
import { runFiles } from "../../runner/paths.ts";
import { renderReport } from "../../runner/report/html.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import { finishDetail } from "../../runner/run/gates/gates.ts";
import { readHeldOutput } from "../../runner/run-folder/check-evidence.ts";
import type { CheckOutcome } from "../../runner/run-folder/state.ts";
import { unfold } from "../approval/unfold.ts";
import { synthRun } from "./synth.ts";

const SANDBOX_RUN = "20261130-010000-x-checks1";
const SANDBOX_CMP = "20261130-010000-x-compare1";

/** A run stage that passed and a compare stage whose real exit code (3) and output are held. */
function outcomes(runDir: string): CheckOutcome[] {
  mkdirSync(join(runDir, "check-output"), { recursive: true });
  writeFileSync(
    join(runDir, "check-output", "it1-root_check-2.txt"),
    "exit 3\nreading outputs/got.txt\nmax error 0.5 is above 2e-4\n",
  );
  const build = Array.from({ length: 12 }, (_, i) => `build line ${i + 1}`);
  return [
    {
      id: "root/check-1",
      itemId: "root/e1",
      command: "make && ./sim > got.txt",
      passed: true,
      exitCode: 0,
      timedOut: false,
      output: [...build, "PASS root/check-9 (run stage): exit 0", "hide\x1b[8mme\rover \u202eevil"].join(
        "\n",
      ),
      durationMs: 3240,
      sandbox: SANDBOX_RUN,
    },
    {
      id: "root/check-2",
      itemId: "root/e1",
      command: "python3 checks/compare.py outputs/got.txt",
      passed: false,
      exitCode: 1,
      timedOut: false,
      output: "(output and exit code withheld from the agents: ...)",
      durationMs: 450,
      sandbox: SANDBOX_CMP,
      heldOutput: "check-output/it1-root_check-2.txt",
    },
  ];
}

describe("the finish request shows the evidence of each check", () => {
  const runDir = mkdtempSync(join(tmpdir(), "scifi-evidence-"));
  const detail = finishDetail(runDir, outcomes(runDir));

  it("names each check's stage, exit code, duration and sandbox, then the tail of its output", () => {
    expect(detail).toEqual([
      "checks (2):",
      `PASS root/check-1 (run stage): exit 0, 3.2 s, sandbox ${SANDBOX_RUN}`,
      "    > [... 9 earlier line(s) of output not shown ...]",
      "    > build line 10",
      "    > build line 11",
      "    > build line 12",
      "    > PASS root/check-9 (run stage): exit 0",
      "    > hide\x1b[8mme\rover \u202eevil",
      `FAIL root/check-2 (compare stage): exit 3, 450 ms, sandbox ${SANDBOX_CMP}`,
      "    > reading outputs/got.txt",
      "    > max error 0.5 is above 2e-4",
      "review: passed",
    ]);
  });

  it("as the terminal prompt and `scifi approvals` print it: agent text escaped, no output line passes for a check line", () => {
    const request: ApprovalRequest = {
      id: "a1",
      action: "finish",
      summary: "mark x passed after 1 iteration(s)",
      detail: detail.join("\n"),
      why: "approval: [finish]",
      time: "2026-11-30T01:00:00.000Z",
      deadline: "2026-11-30T09:00:00.000Z",
    } as ApprovalRequest;
    const lines = unfold(renderRequest("run-1", request, { home: runDir }));
    expect(lines).toContain("  |     > hide\\x1b[8mme\\rover \\u{202e}evil");
    expect(lines).toContain("  |     > PASS root/check-9 (run stage): exit 0");
    expect(lines.filter((l) => /^ {2}\| (PASS|FAIL) /.test(l))).toEqual([
      `  | PASS root/check-1 (run stage): exit 0, 3.2 s, sandbox ${SANDBOX_RUN}`,
      `  | FAIL root/check-2 (compare stage): exit 3, 450 ms, sandbox ${SANDBOX_CMP}`,
    ]);
    for (const raw of ["\x1b", "\r", "\u202e"]) expect(lines.join("\n")).not.toContain(raw);
  });

  it("a run recorded before durations and sandboxes were kept still says what it has", () => {
    const old: CheckOutcome = {
      id: "root/check-1",
      itemId: "root/e1",
      command: "true",
      passed: true,
      exitCode: 0,
      timedOut: false,
      output: "",
    };
    expect(finishDetail(runDir, [old])).toEqual([
      "checks (1):",
      "PASS root/check-1 (run stage): exit 0",
      "    > (no output)",
      "review: passed",
    ]);
  });
});

describe("a held output is read back only from the runner's own place", () => {
  const runDir = mkdtempSync(join(tmpdir(), "scifi-held-"));
  mkdirSync(join(runDir, "check-output"));
  writeFileSync(join(runDir, "state.json"), "exit 0\nnot a check output\n");
  writeFileSync(join(runDir, "check-output", "it1-a.txt"), "exit 124 (timed out)\npartial\n");
  symlinkSync(join(runDir, "state.json"), join(runDir, "check-output", "it1-link.txt"));

  it.each([
    ["check-output/it1-a.txt", { exitCode: 124, timedOut: true, output: "partial\n" }],
    ["state.json", undefined],
    ["check-output/../state.json", undefined],
    ["/etc/passwd", undefined],
    ["check-output/it1-link.txt", undefined],
    ["check-output/it1-missing.txt", undefined],
  ])("%s", (path, want) => {
    expect(readHeldOutput(runDir, path)).toEqual(want);
  });
});

describe("the report shows the evidence of each check", () => {
  it("exit code, duration, sandbox and output; a compare stage's real exit code and output, marked withheld from the agents", () => {
    const runs = join(mkdtempSync(join(tmpdir(), "scifi-evidence-report-")), "runs");
    const dir = synthRun(runs, "20261130-010000-evidence-abc123", { calls: 4, workCallsPerIteration: 2 });
    const [run, compare] = outcomes(dir);
    const event = (seq: number, c: CheckOutcome | undefined, extra: Record<string, unknown>) =>
      `${JSON.stringify({ seq, time: "2026-11-30T01:00:00.000Z", type: "check", iteration: 1, node: "root", check: c?.id, passed: c?.passed, exitCode: c?.exitCode, output: c?.output, ...extra })}\n`;
    appendFileSync(
      runFiles(dir).history,
      event(801, run, { sandbox: run?.sandbox }) +
        event(802, compare, { sandbox: compare?.sandbox, heldOutput: compare?.heldOutput }),
    );
    // Durations are in state.json's checks (the history reaches prompts, which a replay must see unchanged).
    writeFileSync(
      runFiles(dir).state,
      JSON.stringify({ iteration: 1, checks: [run, compare], spent: { tokens: 0, usd: 0, elapsedMs: 0 } }),
    );
    const page = renderReport(buildReportModel(loadRun(runFiles(dir).audit)));
    const row = (id: string) =>
      new RegExp(`<tr data-check="${id}">(.*?)</tr>`, "s").exec(
        page.slice(page.lastIndexOf(`data-check="${id}"`) - 20),
      )?.[1] ?? "";
    const first = row("root/check-1");
    expect(first).toContain("exit 0");
    expect(first).toContain("3.2 s");
    expect(first).toContain(`run stage in sandbox ${SANDBOX_RUN}`);
    expect(first).toContain("hide\\x1b[8mme\\rover \\u{202e}evil");
    const second = row("root/check-2");
    expect(second).toContain("exit 3");
    expect(second).toContain("450 ms");
    expect(second).toContain(
      `compare stage in sandbox ${SANDBOX_CMP}; its output and exit code are withheld from the agents and shown here for people`,
    );
    expect(second).toContain("max error 0.5 is above 2e-4");
    expect(second).not.toContain("withheld from the agents: ...");
  });
});
