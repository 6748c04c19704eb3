// A compare stage's /task is the runner's folder (check assets, outputs/ of the run stages), never
// the task folder: `scifi validate` refuses one that reads a path which is neither, whether or not
// the file exists yet, or an output no run stage declares, and names the run stage that should
// declare it. ```check hidden``` (the older spelling) gets exactly the rules of ```compare```: every
// case runs in both spellings and must give the same diagnostics. Issue 38, item 1.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compareRead } from "../../runner/sam/compare-reads.ts";
import { parseSamString, parseSamSync } from "../../runner/sam/parse.ts";

const ASSETS =
  "check_assets: [checks/grade.py, checks/gen.py, checks/tb.sv]\nhidden_assets: [checks/ref.txt]\n";
/** The run stage every case starts with (line 13 of the SAM). */
const RUN = "- Ok.\n  ```check outputs=result.txt\n  python3 solve.py > result.txt\n  ```\n";
const SPELLINGS = ["compare", "check hidden"] as const;

/** A task folder with the assets, plus `extra` files the agent left; returns the SAM's path. */
function folder(extra: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-compare-reads-"));
  mkdirSync(join(dir, "checks"));
  for (const rel of ["checks/grade.py", "checks/gen.py", "checks/tb.sv", "checks/ref.txt"])
    writeFileSync(join(dir, rel), "");
  for (const [rel, text] of Object.entries(extra)) writeFileSync(join(dir, rel), text);
  return join(dir, "task.md");
}

function samText(fence: string, command: string, run = RUN): string {
  const body = command
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
  return `---\nname: reads\n${ASSETS}---\n# T\n\n## To-do\nDo.\n\n## Expectation\n${run}  \`\`\`${fence}\n${body}\n  \`\`\`\n`;
}

function diagnostics(file: string, fence: string, command: string, run = RUN): string[] {
  return parseSamString(samText(fence, command, run), file).diagnostics.map(
    (d) => `${d.line}:${d.column}: ${d.severity}: ${d.message}`,
  );
}

/** The diagnostics of both spellings, which must be the same. */
function both(file: string, command: string, run = RUN): string[] {
  const [compare, hidden] = SPELLINGS.map((fence) => diagnostics(file, fence, command, run));
  expect(hidden, `check hidden vs compare: ${command}`).toEqual(compare);
  return compare ?? [];
}

describe("a compare stage that reads what its folder never holds", () => {
  const sam = folder();
  it.each([
    ["cmp answer.txt checks/ref.txt", "answer.txt"],
    ["python3 checks/grade.py answer.txt checks/ref.txt", "answer.txt"],
    ["iverilog -g2012 -o /tmp/sim checks/tb.sv TopModule.sv && vvp /tmp/sim", "TopModule.sv"],
    ["test -s out/answer.json && python3 checks/grade.py out/answer.json", "out/answer.json"],
    ["python3 checks/grade.py - checks/ref.txt < answer.txt", "answer.txt"],
    ["python3 checks/grade.py --got=answer.txt checks/ref.txt", "answer.txt"],
    ["timeout 60 python3 checks/grade.py 'fit.json'", "fit.json"],
    ["[ -f answer.txt ] && cmp answer.txt checks/ref.txt", "answer.txt"],
  ])("refuses `%s` (reads %s), not yet in the task folder", (command, read) => {
    const text = both(sam, command).join("\n");
    expect(text).toContain(
      `16:1: error: a compare stage reads \`${read}\`, which is neither a check asset nor under outputs/`,
    );
    expect(text).toContain(
      `declare it on the run stage at line 13 (\`\`\`check outputs=result.txt,${read}\`\`\`)`,
    );
    expect(text).toContain(`read \`outputs/${read}\``);
  });

  it("reads a path as the shell will: outputs/../answer.txt is answer.txt", () => {
    expect(both(sam, "cmp outputs/../answer.txt checks/ref.txt").join("\n")).toMatch(
      /reads `outputs\/\.\.\/answer.txt`, which is neither .* read `outputs\/answer.txt`/,
    );
  });

  it("refuses a program of the task folder that is not a check asset", () => {
    for (const command of [
      "./grade.sh outputs/result.txt",
      "timeout 9 bin/grade.py outputs/result.txt",
      "./grade outputs/result.txt",
    ])
      expect(both(sam, command).join("\n"), command).toMatch(
        /^16:1: error: a compare stage runs `(\.\/grade.sh|bin\/grade.py|\.\/grade)`, which is not a check asset: .* list it in check_assets if it is the runner's program/,
      );
  });

  it("refuses a declared output read in the task folder, wherever it is named", () => {
    const text = both(sam, "python3 checks/gen.py /tmp/e.txt && cmp /tmp/e.txt result.txt").join("\n");
    expect(text).toMatch(
      /reads `result.txt`, which is neither .*; a run stage declares it, so read it as `outputs\/result.txt`$/,
    );
  });

  it("refuses an output no run stage declares, naming the run stage to declare it on", () => {
    const text = both(sam, "cmp outputs/answer.txt checks/ref.txt").join("\n");
    expect(text).toContain(
      "16:1: error: a compare stage reads `outputs/answer.txt`, but no run stage declares `answer.txt`",
    );
    expect(text).toContain(
      "declare it on the run stage at line 13 (```check outputs=result.txt,answer.txt```)",
    );
    const alone = both(sam, "cmp outputs/answer.txt checks/ref.txt", "- Ok.\n").join("\n");
    expect(alone).toContain(
      "declare it in a run stage before this one that makes it (```check outputs=answer.txt```)",
    );
  });

  it("judges the text alone: what the task folder holds changes nothing (issue 38, a38)", () => {
    // The agent writes the task folder: a file it leaves there must not make a valid SAM invalid
    // (nor an invalid one valid), so the same script gets the same diagnostics in both folders.
    const empty = folder();
    const planted = folder({ "notes.txt": "x", solution: "x", done: "x", "expected.txt": "x" });
    for (const [command, refused] of [
      ["cmp notes.txt checks/ref.txt", "notes.txt"],
      ["cmp solution checks/ref.txt", "solution"],
      ["python3 checks/grade.py data/ outputs/result.txt", "data/"],
      ["python3 checks/gen.py > /tmp/x; cmp /tmp/x solution", undefined],
      ["grep -q done outputs/result.txt", undefined],
      ["python3 checks/gen.py expected.txt && cmp expected.txt outputs/result.txt", undefined],
    ] as const) {
      const inEmpty = both(empty, command);
      expect(both(planted, command), command).toEqual(inEmpty);
      if (refused)
        expect(inEmpty.join("\n"), command).toContain(`16:1: error: a compare stage reads \`${refused}\``);
      else expect(inEmpty, command).toEqual([]);
    }
  });

  it.each([
    "cmp outputs/result.txt checks/ref.txt",
    "python3 checks/grade.py outputs/result.txt checks/ref.txt > /tmp/log.txt",
    "python3 checks/gen.py expected.txt && cmp expected.txt outputs/result.txt",
    "python3 checks/gen.py > got.txt && cmp got.txt outputs/result.txt",
    "mkdir -p tmp && python3 checks/gen.py tmp/a.txt; cmp tmp/a.txt outputs/result.txt",
    "iverilog -o sim checks/tb.sv && vvp sim && cmp dump.vcd checks/ref.txt",
    'grep -q "see answer.txt" outputs/result.txt',
    "sed -n 's/x/y.txt/p' outputs/result.txt | cmp - checks/ref.txt",
    "python3 -m checks.grade outputs/result.txt",
    "make -f checks/gen.py got.txt && cmp got.txt outputs/result.txt",
    "python3 checks/grade.py outputs/result.txt 2> err.log",
    "echo 1.5 2.0e3 | python3 checks/grade.py outputs/result.txt",
    "cd checks && python3 grade.py ../outputs/result.txt",
    "python3 checks/grade.py --ref=checks/ref.txt outputs/result.txt",
    "# answer.txt is the agent's; it reaches us as outputs/result.txt\ncmp outputs/result.txt checks/ref.txt",
    "python3 - <<'EOF'\nprint(open('answer.txt').read())\nEOF\ncmp outputs/result.txt checks/ref.txt",
    "cat outputs/result.txt | tee /tmp/copy.txt | cmp - checks/ref.txt",
    'test "$(cat outputs/result.txt)" = "$(cat checks/ref.txt)"',
    "for f in a.txt b.txt; do test -n $f; done; cmp outputs/result.txt checks/ref.txt",
    "cmp outputs/ checks/ref.txt || cmp outputs checks/ref.txt",
  ])("accepts `%s`", (command) => {
    expect(both(sam, command)).toEqual([]);
  });
});

describe("a hostile script", () => {
  it("is linted in time linear in its length (400 KB of commands and quotes)", () => {
    const folder = {
      assets: ["checks/ref.txt"],
      declared: Array.from({ length: 2000 }, (_, i) => `o${i}/r.txt`),
    };
    for (const unit of ["python3 checks/gen.py a.txt; cat a.txt > p/b.txt; ", "'((((\"$(`<<E\n", "a\\\n"]) {
      const script = unit.repeat(Math.floor(400_000 / unit.length));
      const started = performance.now();
      compareRead(script, folder);
      // Quadratic work over ~8,000 commands would take minutes; linear takes well under a second.
      expect(performance.now() - started, unit).toBeLessThan(15_000);
    }
  });
});

describe("```check hidden``` is read exactly as ```compare```", () => {
  const sam = folder();
  const CMP = "cmp outputs/result.txt checks/ref.txt";
  it.each([
    ["", CMP, /^$/],
    ["timeout=30s", CMP, /^$/],
    ["timeout=soon", CMP, /invalid check timeout `soon`/],
    ["outputs=a.txt", CMP, /a compare stage .* declares no outputs/],
    ["strict", CMP, /unknown compare stage option `strict`/],
    [
      "timeout=1m strict outputs=../x",
      CMP,
      /not a plain relative path[\s\S]*unknown compare stage option `strict`/,
    ],
    ["", "", /empty compare stage/],
    ["", "sh outputs/result.txt", /hands `outputs\/result.txt` to `sh`/],
    ["", "rbash outputs/result.txt", /hands `outputs\/result.txt` to `rbash`/],
    ["", "strace -f outputs/result.txt", /hands `outputs\/result.txt` to `strace`/],
    ["", `${CMP} || true`, /^warning: .*forced to 0/],
  ])("options `%s`, script `%s`", (meta, command, expected) => {
    const spellings = [`compare ${meta}`, `check hidden ${meta}`, `check ${meta} hidden`].map((fence) => {
      const parsed = parseSamString(samText(fence.trim(), command), sam);
      const checks = parsed.ok ? parsed.sam.root.items[0]?.checks : undefined;
      return { diagnostics: parsed.diagnostics, check: checks?.[1] };
    });
    expect(spellings[1]).toEqual(spellings[0]);
    expect(spellings[2]).toEqual(spellings[0]);
    const text = (spellings[0]?.diagnostics ?? []).map((d) => `${d.severity}: ${d.message}`).join("\n");
    expect(text).toMatch(expected);
  });

  it("a compare stage's unknown option names the compare stage's one option", () => {
    const parsed = parseSamString(
      samText("check hidden strict", "cmp outputs/result.txt checks/ref.txt"),
      folder(),
    );
    expect(parsed.diagnostics.map((d) => d.message)).toEqual([
      "unknown compare stage option `strict`; a compare stage (```compare``` or ```check hidden```) takes only `timeout=<duration>` (e.g. `timeout=30s`)",
    ]);
  });
});

describe("scifi validate", () => {
  it("exits 1 with file:line:col for a compare stage reading the agent's file, in either spelling", () => {
    const sams = SPELLINGS.map((fence) => {
      const sam = folder();
      writeFileSync(sam, samText(fence, "python3 checks/grade.py answer.txt checks/ref.txt"));
      return sam;
    });
    const bin = join(import.meta.dirname, "..", "..", "bin", "scifi.js");
    const run = spawnSync(process.execPath, [bin, "validate", ...sams], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    for (const sam of sams) {
      expect(run.stdout).toContain(`${sam}:16:1: error: a compare stage reads \`answer.txt\``);
      expect(parseSamSync(sam).ok).toBe(false);
    }
  });
});
