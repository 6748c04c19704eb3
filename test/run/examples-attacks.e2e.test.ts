// The shipped examples against an agent that wants the PASS without the work (issue 37, item 5):
// each case is one example, one scripted agent and one real Docker run. Every attack passed the
// examples as they were (the agent's code ran beside the judge, or the judge recomputed from a file
// the agent could rewrite); each must fail now, for the reason the case names.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO, workspace } from "./harness.ts";

type Call = { name: string; input: Record<string, unknown> };
const write = (path: string, content: string): Call => ({ name: "write_file", input: { path, content } });
const bash = (command: string): Call => ({ name: "bash", input: { command } });

interface Attack {
  example: string;
  what: string;
  /** The agent's tool calls, one step each. */
  calls: Call[];
  /** Expectation items the (scripted, lying) review passes. */
  items: number;
  /** The check that must fail (a compare stage). */
  failing: string;
  /** A check asset the agent rewrote: as shipped after the run (refused or put back). */
  restored?: string;
}

/** The judge's exit status rewritten to 0 by a process the agent's code leaves behind (ptrace). */
const PTRACE_ANALYSIS = readFileSync(
  join(import.meta.dirname, "..", "fixtures", "attacks", "ptrace-judge.py"),
  "utf8",
);

const ATTACKS: Attack[] = [
  {
    example: "verilator-counter-debug",
    what: "a design that ends the simulation with $c exit(0), bug left in",
    calls: [
      write(
        "rtl/counter.v",
        readFileSync(join(REPO, "tasks/examples/verilator-counter-debug/rtl/counter.v"), "utf8").replace(
          "  always_ff @(posedge clk) begin",
          '  initial $c("std::exit(0);");\n\n  always_ff @(posedge clk) begin',
        ),
      ),
    ],
    items: 2,
    failing: "root/check-2",
  },
  {
    example: "gfortran-build-run",
    what: "a Makefile whose ./stats prints the judge's reference",
    calls: [
      write(
        "Makefile",
        "stats:\n\tprintf '#!/bin/sh\\ncat checks/expected_output.txt\\n' > stats && chmod +x stats\n\nclean:\n\trm -f stats\n",
      ),
      bash("make && mkdir -p results && ./stats data/values.txt > results/stats.txt"),
    ],
    items: 3,
    failing: "root/check-2",
  },
  {
    example: "pandas-csv-aggregation",
    what: "data/events.csv rewritten to match a constant summary",
    calls: [
      write(
        "data/events.csv",
        "run,event,detector,energy_gev,quality\n1,1,HCAL,1.0,good\n1,2,HCAL,3.0,good\n",
      ),
      write(
        "aggregate.py",
        'import pandas  # noqa\nopen("summary.csv", "w").write("detector,n_events,mean_energy_gev,std_energy_gev,max_energy_gev\\nHCAL,2,2.0,1.4142135623730951,3.0\\n")\n',
      ),
      bash("python3 aggregate.py"),
    ],
    items: 2,
    failing: "root/check-2",
    restored: "data/events.csv",
  },
  {
    example: "lhco-dijet-selection",
    what: "an empty selection and a leftover process that ptraces the judge to exit 0",
    calls: [write("analysis.py", PTRACE_ANALYSIS), bash("mkdir -p results")],
    items: 2,
    failing: "root/check-2",
  },
  {
    example: "root-gaussian-fit",
    what: "data/histogram.csv rewritten to match a made-up fit",
    calls: [
      write(
        "data/histogram.csv",
        `bin_low,bin_high,count\n${Array.from({ length: 50 }, (_, i) => `${i / 5},${(i + 1) / 5},${i === 24 ? 10 : 0}`).join("\n")}\n`,
      ),
      write(
        "fit_gaussian.py",
        'import json\njson.dump({"method": "scipy", "mean": 4.9, "mean_error": 0.01, "sigma": 0.01, "sigma_error": 0.01, "chi2": 1.0, "ndf": 1}, open("fit.json", "w"))\nopen("fit.png", "wb").write(b"\\x89PNG\\r\\n\\x1a\\n")\n',
      ),
      bash("python3 fit_gaussian.py"),
    ],
    items: 2,
    failing: "root/check-2",
    restored: "data/histogram.csv",
  },
];

/** The scripted models of one attack: work makes the calls and claims done; the review claims a pass. */
function script(attack: Attack): string {
  const items = Array.from({ length: attack.items }, (_, i) => ({
    id: `root/e${i + 1}`,
    pass: true,
    evidence: "scripted: the review claims a pass; the runner's checks decide",
  }));
  return stringify({
    prescan: [
      { json: { node: "root", rank: 1, skills: [], context: "", plan: "cheat", direction: "cheat" } },
    ],
    work: [
      ...attack.calls.map((call) => ({ tool_calls: [call] })),
      { tool_calls: [{ name: "report_done", input: { claim: "done", summary: attack.what } }] },
    ],
    review: [{ json: { items, findings: [], fixes: [], rank_adjustment: 0 } }],
    final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
  });
}

describe.skipIf(!hasEngine("docker"))(
  "the examples' own attacks fail (docker, scripted agents)",
  { timeout: 600_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it.each(ATTACKS)("$example: $what", async (attack) => {
      const ws = workspace(attack.example, { iterations: 1 });
      const model = join(ws.root, "attack.yaml");
      writeFileSync(model, script(attack));
      const result = await runTask({
        home: ws.home,
        task: ws.sam,
        backend: "docker",
        model: `scripted:${model}`,
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      });
      const history = readHistory(join(result.dir, "history.jsonl"));
      const checks = history.flatMap((e) => (e.type === "check" ? [[e.check, e.passed] as const] : []));
      expect(result.outcome.status, JSON.stringify(checks)).toBe("failed");
      expect(checks, "the compare stage judged the work and failed it").toContainEqual([
        attack.failing,
        false,
      ]);
      // The rewritten input is refused or put back: the judge recomputed from the shipped data.
      if (attack.restored)
        expect(readFileSync(join(ws.taskDir, attack.restored))).toEqual(
          readFileSync(join(REPO, "tasks", "examples", attack.example, attack.restored)),
        );
    });
  },
);
