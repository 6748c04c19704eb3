// `scifi evolve` proposes to demote a model whose runs the runner had to stop (integrity events,
// docs/integrity.md) significantly more often than its peers' at the same rank: Fisher's exact test
// as for pass rates, alpha divided by the models tested. Two models that pass equally often, one with
// events in 10 of its 12 runs, the other in none; and the same corpus without events: no proposal.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { evolve } from "../../runner/evolve/evolve.ts";
import { fisherExact } from "../../runner/evolve/fisher.ts";
import { renderResult } from "../../runner/evolve/render.ts";
import { homePaths } from "../../runner/paths.ts";
import { modelRuns, writeRun } from "./corpus.ts";

const MODELS_YAML = `models:
  - name: scripted-gamer
    provider: anthropic
    model: gamer-model
    baseURL: http://127.0.0.1:9/v1
    rank: 2
    kinds: [work]
    prices: { input: 0, output: 0 }
    noApiKey: true
  - name: scripted-steady
    provider: anthropic
    model: steady-model
    baseURL: http://127.0.0.1:9/v1
    rank: 2
    kinds: [control, work]
    prices: { input: 0, output: 0 }
    noApiKey: true
`;

async function evolveWith(gamerEvents: number) {
  const home = mkdtempSync(join(tmpdir(), "scifi-evolve-integrity-"));
  const gamer = modelRuns("scripted-gamer", 2, { passing: 10, late: 2, failing: 0 }).map((run, i) => ({
    ...run,
    integrityEvents: i < 10 ? gamerEvents : 0,
  }));
  for (const run of [...gamer, ...modelRuns("scripted-steady", 2, { passing: 10, late: 2, failing: 0 })])
    writeRun(homePaths(home).runs, run);
  writeFileSync(join(home, "models.yaml"), MODELS_YAML);
  return evolve({ home, write: false, promptFile: join(home, "none.md") });
}

async function proposalsFor(gamerEvents: number) {
  const result = await evolveWith(gamerEvents);
  return result.proposals.map((p) => p.proposal).filter((p) => p.kind !== "skill" && p.kind !== "prompt");
}

describe("evolve and integrity events", () => {
  it("demotes the model the runner had to stop more often than its peer, with the test", async () => {
    const proposals = await proposalsFor(2);
    expect(proposals.map((p) => p.title)).toEqual([
      "move scripted-gamer down from rank 2 to rank 1 (integrity)",
    ]);
    const [demote] = proposals;
    expect(demote?.kind).toBe("demote");
    expect(demote?.reason).toContain("10/12 (83 %) of its runs, against 0/12 (0 %)");
    expect(demote?.evidence.test?.p).toBeCloseTo(fisherExact(10, 2, 0, 12).p, 12);
    expect(demote?.evidence.test?.alpha).toBeCloseTo(0.05 / 2, 12);
    expect(demote?.evidence.numbers.runsWithIntegrityEvents).toBe(10);
    expect(demote?.change?.diff).toContain("-    rank: 2\n+    rank: 1\n");
  });

  it("the listing names the counts as runs with and without events", async () => {
    const text = renderResult(await evolveWith(2));
    expect(text).toContain("10 with, 2 without");
    expect(text).not.toMatch(/integrity events 10 passed/);
  });

  it("no events, no integrity proposal", async () => {
    expect(await proposalsFor(0)).toEqual([]);
  });
});
