// Attack (held): the tracer's sandbox, probed from inside on Docker by a scripted (labelled scripted)
// tracer after the work agent delivered the lhco example's wrong veto plus a planted numpy.py. The
// docs promise the phase "in a fresh sandbox of its own ... the task folder and every mount read-only,
// no network" (docs/critique.md). Since r4-fixcrit the tracer has no bash (read_file, glob, grep):
// its probes are refused before they run, and nothing it tried is left in the task folder.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))("attack: the tracer's sandbox (scripted)", { timeout: 240_000 }, () => {
  beforeAll(() => ensureImage());

  it("has no command tool, so nothing it tries writes, connects or runs", async () => {
    const ws = workspace("lhco-dijet-selection");
    const { result, history } = await runScripted(ws, "../critique/attack/sandbox.yaml");
    expect(result.outcome.status).toBe("passed");
    expect(history.find((e) => e.type === "critique")).toMatchObject({ effect: "none", mode: "report" });
    const tape = readTape(join(result.dir, "audit.jsonl"), { tolerant: true });
    const tracer = tape.filter((r) => r.kind === "call" && r.role === "tracer");
    const seen = JSON.stringify(tracer.at(-1));
    // The tracer has no command tool at all (trust rule 8): every probe is refused before it runs.
    expect(seen).toContain("Unknown tool 'bash'. Available tools: read_file, glob, grep.");
    // The commands echo `W1=$?` etc.: a digit after `=` would be one that ran.
    for (const probe of ["W1", "W2", "W3", "N1"]) expect(seen).not.toMatch(new RegExp(`${probe}=\\d`));
    expect(existsSync(join(ws.taskDir, "tracer-probe"))).toBe(false);
    expect(readFileSync(join(ws.taskDir, "analysis.py"), "utf8").endsWith("out)\n")).toBe(true);
  });
});
