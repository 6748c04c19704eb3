// a41e (attacker on issue 41's fixes): `scifi evolve --model` sends its summary request past the
// model's window.
// Fixed (fix41-single): runner/evolve/summarise.ts lists the findings within the room
// budgetFor(model, "control", 1) leaves (each quoted within its share, the least recurring left out
// with the runner's note), calls assertFits before sending, and records contextBudget.
//
// The promise (issue 41, docs/models.md "Context windows", docs/loop.md): "No request the runner
// sends exceeds the window less the reply's reservation"; single calls and helpers are kept under
// the budget (runner/agents/brief-budget.ts, runner/helpers/budget.ts), and "a request that still
// cannot fit is not sent" (RequestTooLong, naming the part that is too long).
//
// What happened: evolve's one model call (runner/evolve/summarise.ts) lists every recurring review
// finding whole (hostile agent text, any length, any number) with no budget at all: no assertFits,
// no share for the listing, no contextBudget on the tape. A month of findings under a 8k-token
// local model goes out as one request of about 30k tokens and comes back as the provider's 400
// ("prompt is too long"); `scifi evolve --model` fails in the provider's words, naming no part.
//
// Suggested fix: give the listing a share of budgetFor(model, "control", 1) (the most recurring
// first, each finding quoted within its share, a note saying how many were left out), call
// assertFits before sending, and record contextBudget like the other single calls.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { RecurringFinding } from "../../runner/evolve/stats.ts";
import { summariseFindings } from "../../runner/evolve/summarise.ts";
import { openHelperSession } from "../../runner/helpers/session.ts";

it("evolve's summary of many long findings stays inside an 8k window (scripted model)", async () => {
  const home = mkdtempSync(join(tmpdir(), "scifi-a41e-evolve-"));
  const script = join(home, "summary.yaml");
  writeFileSync(script, `context_window: 8000\nevolve:\n  - text: "- Test the reset."\n`);
  const findings: RecurringFinding[] = Array.from({ length: 150 }, (_, i) => ({
    text: `finding ${i}: ${"the agent skipped the reset step and reported done anyway; ".repeat(10)}`,
    runs: [`run-${i}-a`, `run-${i}-b`],
    count: 2,
  }));
  const session = await openHelperSession({ home, helper: "evolve", modelSpec: `scripted:${script}` });
  let error: Error | undefined;
  try {
    await summariseFindings(session, findings);
  } catch (e) {
    error = e as Error;
  } finally {
    await session.close();
  }
  // Either it fits (shortened) or it is not sent, with the runner's own words: never a provider's refusal.
  if (error) expect(error.name).toBe("RequestTooLong");
  const tape = readFileSync(join(session.runDir, "audit.jsonl"), "utf8");
  expect(tape).not.toContain("prompt is too long");
  // Here it fits: the most recurring findings sent, the rest said to be left out, the budget recorded.
  expect(error).toBeUndefined();
  const call = tape
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .find((r) => r.kind === "call");
  expect(call?.request?.contextBudget).toBeGreaterThan(0);
  const sent = JSON.stringify(call?.request?.messages);
  expect(sent).toContain("finding 0:");
  expect(sent).toMatch(/scifi left out the \d+ least recurring of these 150 findings/);
});
