// A37-2 (attacker on issue 37, output formats): docs/loop.md says a Python pickle output is refused
// "always", found by "the pickle protocol header". The header (0x80, protocol) is optional: a
// protocol 0 pickle is ASCII opcodes with no header, and pickle.load / pandas.read_pickle read it
// all the same. This one calls getattr(pathlib.Path("/task/checks/expected\x2etxt"), "read_text")()
// when loaded: the STRING opcode undoes the `\x2e` escape, so the reference's name is not in the
// bytes either (the hidden-name search misses it). In scifi-sci:local the loaded result is the
// hidden reference. Fixed: the guard walks the pickle opcodes (runner/run/checks/output-pickle.ts) and
// refuses a stream that imports or calls, headers or not; a name a grader loads as a pickle
// (.pkl, .pickle, .joblib) is refused whatever its bytes.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { outputFormatProblem } from "../../runner/run/checks/output-formats.ts";
import { hasEngine } from "../helpers/engines.ts";

const output = Buffer.from(
  "cbuiltins\ngetattr\n(cpathlib\nPath\n(S'/task/checks/expected\\x2etxt'\ntRS'read_text'\ntR(tR.",
  "latin1",
);

/** A one-member ustar archive, as Python's tarfile writes one. */
function tar(name: string, data: Buffer): Buffer {
  const header = Buffer.alloc(512);
  header.write(name, 0, "latin1");
  header.write("0000644\0", 100, "latin1");
  header.write("0000000\0", 108, "latin1");
  header.write("0000000\0", 116, "latin1");
  header.write(`${data.length.toString(8).padStart(11, "0")}\0`, 124, "latin1");
  header.write("00000000000\0", 136, "latin1");
  header.write("0", 156, "latin1");
  header.write("ustar\u000000", 257, "latin1");
  header.fill(0x20, 148, 156);
  const sum = header.reduce((a, b) => a + b, 0);
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  const body = Buffer.alloc(Math.ceil(data.length / 512) * 512);
  data.copy(body);
  return Buffer.concat([header, body, Buffer.alloc(1024)]);
}

const hiddenNames = ["checks/expected.txt", "expected.txt"];
const refused = (rel: string, data: Buffer) => outputFormatProblem(rel, data, { hiddenNames });

describe("A37-2: a protocol 0 pickle (no header) that reads the reference when loaded", () => {
  it.skipIf(!hasEngine("docker"))(
    "is what a grader's pickle.load and pandas.read_pickle turn into the hidden reference (real Docker)",
    () => {
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
        [
          "run",
          "--rm",
          "--network=none",
          "-v",
          `${task}:/task:ro`,
          "scifi-sci:local",
          "python3",
          "-c",
          script,
        ],
        { encoding: "utf8" },
      );
      expect(read).toBe("42.125\n42.125\n");
    },
    60_000,
  );

  it("is refused when copied out", () => {
    const problem = outputFormatProblem("out/result.pkl", output, {
      hiddenNames: ["checks/expected.txt", "expected.txt"],
    });
    expect(problem).toContain("declared output out/result.pkl is refused");
  });

  it("is refused whatever its name, and so is protocol 1 (binary opcodes, no header)", () => {
    // pickle.dumps of an object whose __reduce__ is (os.system, ("cat /task/checks/expected.txt",)).
    const p0 = Buffer.from("cposix\nsystem\np0\n(Vcat /task/checks/expected.txt\np1\ntp2\nRp3\n.", "latin1");
    const p1 = Buffer.from(
      "cposix\nsystem\nq\x00(X\x1d\x00\x00\x00cat /task/checks/expected.txtq\x01tq\x02Rq\x03.",
      "latin1",
    );
    // The older call opcodes: OBJ (class and arguments after a MARK) and INST (protocol 0).
    const obj = Buffer.from("(cos\nsystem\nS'cat /task/checks/expected.txt'\no.", "latin1");
    const inst = Buffer.from("(S'cat /task/checks/expected.txt'\nios\nsystem\n.", "latin1");
    for (const data of [output, p0, p1, obj, inst]) {
      expect(refused("out/result.dat", data)).toContain("a Python pickle (protocol 0 or 1, no header)");
      // pickle.load reads the first pickle and ignores what follows it.
      expect(refused("out/result.dat", Buffer.concat([data, Buffer.from("\n1,2,3\n")]))).toContain(
        "Python pickle",
      );
    }
  });

  it("a call pushed past the walk by a million harmless opcodes is refused all the same", () => {
    const padding = Buffer.from("N0".repeat(600_000), "latin1");
    expect(refused("out/result.dat", Buffer.concat([padding, output]))).toContain("Python pickle");
  });

  it("is refused inside a gzip file and a tar member", () => {
    expect(refused("out/result.gz", gzipSync(output))).toContain("Python pickle (protocol 0 or 1");
    const problem = refused("out/result.tar", tar("inner.bin", output));
    expect(problem).toContain("Python pickle (protocol 0 or 1");
    expect(problem).toContain("tar member inner.bin");
  });

  it("a .pkl, .pickle or .joblib output is refused by its name, whatever its bytes", () => {
    for (const name of ["out/a.pkl", "out/b.PICKLE", "out/c.joblib"])
      expect(refused(name, Buffer.from("1.5\n"))).toContain("a Python pickle (by its name)");
    expect(refused("out/result.tar", tar("model.pkl", Buffer.from("x")))).toContain("tar member model.pkl");
  });

  it("controls: text that is not a pickle, and a plain-data pickle that calls nothing, pass", () => {
    const plain0 = Buffer.from("(lp0\nF1.5\naVa\np1\na(dp2\nVx\np3\nI2\nsa.", "latin1");
    const texts = [
      "42.125\n",
      "count,value\n1,2\n3,4\n",
      '{"sum": 42.125}\n',
      "<result><sum>42.125</sum></result>\n",
      "1.\n",
      ".",
      "cat\ndog\n",
      "STOP.",
    ].map((t) => Buffer.from(t));
    for (const data of [plain0, ...texts]) expect(refused("out/result.txt", data)).toBeUndefined();
  });
});
