// a41e (attacker on issue 41's fixes): a long claim buries the runner's own facts in task memory.
// Fixed (fix41-single): failureMemoryBody quotes the claim, the summary and each failed check's tail
// within ENTRY_QUOTE_TOKENS (runner/run/session/memory-writes.ts), cut with the runner's note naming
// state.json and the tape, so the entry stays small beside the runner's facts and fitMemory keeps it whole.
//
// The promise (docs/loop.md "Single calls"): past its share of the budget, task memory keeps "the
// newest entries whole, the older ones show only their titles"; the review's brief quotes the work
// agent's claim "within a tenth of the budget".
//
// What happened: the failed review's memory entry (runner/run/session/memory-writes.ts) writes the
// work agent's claim and summary whole (report_done's `claim` has no cap). A claim of 60 000
// characters (a log pasted into report_done, a careless or gaming agent) makes the newest entry
// larger than the pre-scan's room, so fitMemory shows it by its title alone: the next pre-scan
// loses that iteration's failed checks (exit codes, their tails: the runner's own facts) and the
// review's fixes, while the agent decided what filled the entry. With two entries the older one,
// small, is shown as its title too (fitMemory stops taking whole entries at the first that does
// not fit).
//
// Suggested fix: quote the claim and summary in the memory entry within a share of the budget (or
// a fixed cap, with the runner's note naming state.json and the tape), or have fitMemory cut the
// agent's fenced parts of an entry before it drops the runner's parts (failed checks, fixes).
import { describe, expect, it } from "vitest";
import { fitMemory } from "../../../runner/agents/brief-budget.ts";
import { formatEntry } from "../../../runner/memory/entries.ts";
import { failureMemoryBody } from "../../../runner/run/session/memory-writes.ts";
import type { CheckOutcome } from "../../../runner/run-folder/state.ts";

function entry(iteration: number, claim: string): string {
  const failed = {
    id: "root/check-1",
    command: "python3 check.py",
    exitCode: 3,
    passed: false,
    output: "AssertionError: mean is 4.2, expected 4.0 (RUNNER FACT)",
  } as unknown as CheckOutcome;
  const body = failureMemoryBody({
    node: { id: "root", title: "Compute the mean" },
    iteration,
    work: { exit: "done", claim, summary: "short summary" } as never,
    failedChecks: [failed],
    verdict: { findings: ["the mean uses the wrong column"], fixes: [`FIX-${iteration}: use column B`] },
  });
  return formatEntry({
    id: `run1/it${iteration}/review`,
    time: `2026-12-04T0${iteration}:00:00.000Z`,
    runId: "run1",
    role: "review",
    title: `Iteration ${iteration}: review failed root`,
    body,
  });
}

describe("a41e: task memory under a budget keeps the runner's facts", () => {
  it("a 60 000-character claim does not make the pre-scan lose the newest failed check and fixes", () => {
    const memory = entry(1, "I computed the mean.") + entry(2, `done ${"x".repeat(60_000)}`);
    // The room a 32k-token model's pre-scan leaves task memory: several thousand tokens.
    const fitted = fitMemory(memory, 8_000);
    expect(fitted.text).toContain("FIX-2: use column B");
    expect(fitted.text).toContain("RUNNER FACT");
    // The older, small entry still fits whole beside a cut claim.
    expect(fitted.text).toContain("FIX-1: use column B");
    // The cut is said, outside the quote, with where the whole claim is.
    expect(fitted.text).toMatch(
      /```\n\n\[scifi cut the text above from 60005 characters .*state\.json: work.*report_done/,
    );
  });
});
