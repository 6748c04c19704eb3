// Real scripted runs (Docker) against what `scifi evolve` reads and what the synthetic corpus writes:
// the facts of a real two-iteration run come out as they happened; the corpus (corpus.ts) writes
// the same fields for every record evolve reads; and a run started after a proposal was applied
// records it (state.json `evolve`) and its report says so.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evolve } from "../../runner/evolve/evolve.ts";
import { readRunFacts } from "../../runner/evolve/run-facts.ts";
import { applyProposal } from "../../runner/evolve/store.ts";
import { homePaths, runFiles } from "../../runner/paths.ts";
import { writeRunReport } from "../../runner/report/report.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "../run/harness.ts";
import { modelRuns, writeRun } from "./corpus.ts";

const lines = (file: string) =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Key sets by record kind: history events by type, tape records by kind (calls also by request keys). */
function shapes(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of lines(runFiles(dir).history)) out.set(`history ${e.type}`, Object.keys(e).sort().join(","));
  for (const r of lines(runFiles(dir).audit)) {
    if (r.kind !== "call") continue;
    // `wire` is the provider's body: the synthetic tape has no provider; evolve never reads it.
    const keys = Object.keys(r).filter((k) => k !== "wire" && k !== "mac");
    out.set(`call ${r.role}`, keys.sort().join(","));
    out.set(
      `request ${r.role}`,
      Object.keys(r.request as object)
        .sort()
        .join(","),
    );
  }
  return out;
}

describe.skipIf(!hasEngine("docker"))("evolve on real scripted runs", () => {
  beforeAll(() => ensureImage(), 1_800_000);
  let first: string;

  beforeAll(async () => {
    const ws = workspace("verilator-counter-debug");
    first = (await runScripted(ws, "verilator-two-iterations.yaml")).result.dir;
  }, 300_000);

  it("reads the facts of a real run as they happened", () => {
    const facts = readRunFacts(first);
    expect(facts).toMatchObject({
      task: "verilator-counter-debug",
      group: "rtl-debugging",
      outcome: "passed",
      iterations: 2,
      scripted: true,
    });
    expect(
      facts.passes.map((p) => [
        p.iteration,
        p.entry,
        p.rank,
        p.passed,
        p.hadChecks,
        p.checksPassed,
        p.reviewSaidPass,
      ]),
    ).toEqual([
      [1, "scripted-verilator-two-iterations", 1, false, true, false, false],
      [2, "scripted-verilator-two-iterations", 2, true, true, true, true],
    ]);
    // Iteration 2's first step edited the counter; its result came back in the second work call.
    expect(facts.tools).toEqual([
      {
        entry: "scripted-verilator-two-iterations",
        rank: 2,
        results: 1,
        failures: 0,
        allowlistRejections: 0,
        runnerRejections: 0,
      },
    ]);
    expect(facts.failingChecks.map((c) => c.check)).toEqual(["root/check-2"]);
    // A compare stage: what the agents and the history get is pass or fail; the output is for people.
    expect(facts.failingChecks[0]?.output).toContain("output and exit code withheld from the agents");
    expect(facts.findings).toEqual(["The counter counts to N instead of N-1."]);
  });

  it("the synthetic corpus writes the same fields as the real run, for every record it has", () => {
    const runs = join(first, "..", "..", "synthetic");
    const synthetic = writeRun(runs, {
      ...(modelRuns("scripted-x", 1, { passing: 0, late: 1, failing: 0 })[0] as Parameters<
        typeof writeRun
      >[1]),
    });
    const real = shapes(first);
    const synth = shapes(synthetic);
    for (const [kind, keys] of synth) {
      if (!real.has(kind)) continue;
      expect(`${kind}: ${keys}`).toBe(`${kind}: ${real.get(kind)}`);
    }
    // Every history event and call role evolve reads is in both.
    for (const kind of [
      "history verdict",
      "history check",
      "history work_end",
      "history run_end",
      "call work",
      "call review",
      "request work",
    ])
      expect([kind, synth.has(kind), real.has(kind)]).toEqual([kind, true, true]);
    const stateKeys = (dir: string) =>
      Object.keys(JSON.parse(readFileSync(runFiles(dir).state, "utf8"))).sort();
    // The real state has the last pass's plan, work, checks and verdict, which evolve does not read.
    const notWritten = ["auditHead", "checks", "direction", "plan", "verdict", "work"];
    expect(stateKeys(synthetic)).toEqual(stateKeys(first).filter((k) => !notWritten.includes(k)));
  });

  it("a run started after a proposal was applied records it, and its report names it", async () => {
    const home = join(first, "..", "..");
    for (const run of [
      ...modelRuns("scripted-weak", 2, { passing: 0, late: 2, failing: 10 }),
      ...modelRuns("scripted-steady", 2, { passing: 9, late: 3, failing: 0 }),
    ])
      writeRun(homePaths(home).runs, run);
    const models = join(home, "models.yaml");
    const entry = (name: string) =>
      `  - name: ${name}\n    provider: anthropic\n    model: m\n    rank: 2\n    prices: { input: 0, output: 0 }\n    noApiKey: true\n`;
    writeFileSync(models, `models:\n${entry("scripted-weak")}${entry("scripted-steady")}`);
    mkdirSync(join(home, "prompts"), { recursive: true });
    const result = await evolve({ home, modelsFile: models, promptFile: join(home, "prompts", "none.md") });
    const demote = result.proposals.find((p) => p.proposal.kind === "demote")?.proposal;
    expect(demote?.title).toBe("move scripted-weak down from rank 2 to rank 1");
    await applyProposal(home, demote?.id as string, { note: "e2e", who: "tester" });

    const ws = { ...workspace("verilator-counter-debug"), home };
    const later = (await runScripted(ws, "verilator-pass.yaml")).result.dir;
    const state = JSON.parse(readFileSync(runFiles(later).state, "utf8")) as {
      evolve?: { id: string; kind: string }[];
    };
    expect(state.evolve?.map((p) => [p.id, p.kind])).toEqual([[demote?.id, "demote"]]);
    // The report, as the run's end writes it (rendered again here: that write is not this test's).
    const page = join(later, "report-evolve.html");
    writeRunReport(runFiles(later).audit, page, home);
    const report = readFileSync(page, "utf8");
    expect(report).toContain('id="fact-evolve"');
    expect(report).toContain(demote?.id as string);
    // The run before the decision ran under none.
    expect(readRunFacts(first).evolve).toEqual([]);
    expect(readRunFacts(later).evolve).toEqual([demote?.id]);
  }, 300_000);
});
