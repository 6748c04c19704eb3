// A37-2 (attacker on issue 37, output formats): docs/loop.md says a Python pickle output is refused
// "always", found by "the pickle protocol header". The header (0x80, protocol) is optional: a
// protocol 0 pickle is ASCII opcodes with no header, and pickle.load / pandas.read_pickle read it
// all the same. This one calls getattr(pathlib.Path("/task/checks/expected\x2etxt"), "read_text")()
// when loaded: the STRING opcode undoes the `\x2e` escape, so the reference's name is not in the
// bytes either (the hidden-name search misses it). In scifi-sci:local the loaded result is the
// hidden reference. FAILS today: the guard returns undefined. Fix: a pickle needs no header; refuse
// a file that parses as pickle opcodes (e.g. a GLOBAL/STACK_GLOBAL/REDUCE/INST/OBJ opcode stream
// ending in STOP), or refuse any output the grader would unpickle by its extension.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/output-formats.ts";

const output = Buffer.from(
  "cbuiltins\ngetattr\n(cpathlib\nPath\n(S'/task/checks/expected\\x2etxt'\ntRS'read_text'\ntR(tR.",
  "latin1",
);

describe("A37-2: a protocol 0 pickle (no header) that reads the reference when loaded", () => {
  it("is what a grader's pickle.load and pandas.read_pickle turn into the hidden reference (real Docker)", () => {
    const task = mkdtempSync(join(tmpdir(), "a37-pickle-"));
    mkdirSync(join(task, "checks"));
    mkdirSync(join(task, "out"));
    writeFileSync(join(task, "checks", "expected.txt"), "42.125\n");
    writeFileSync(join(task, "out", "result.pkl"), output);
    const script = [
      "import pickle, pandas",
      "a = pickle.load(open('/task/out/result.pkl', 'rb'))",
      "b = pandas.read_pickle('/task/out/result.pkl')",
      "print(a + b, end='')",
    ].join("\n");
    const read = execFileSync(
      "docker",
      ["run", "--rm", "--network=none", "-v", `${task}:/task:ro`, "scifi-sci:local", "python3", "-c", script],
      { encoding: "utf8" },
    );
    expect(read).toBe("42.125\n42.125\n");
  }, 60_000);

  it("is refused when copied out", () => {
    const problem = outputFormatProblem("out/result.pkl", output, {
      hiddenNames: ["checks/expected.txt", "expected.txt"],
    });
    expect(problem).toContain("declared output out/result.pkl is refused");
  });
});
