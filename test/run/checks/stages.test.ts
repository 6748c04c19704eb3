// Checks in stages, short of a run: how the parser reads run and compare stages and what
// `scifi validate` refuses or warns about; the runner's copies of declared outputs (no link, no
// FIFO, nothing missing passes); the compare folder (assets and outputs only); the manifest of what
// the checks judged; the assets a task folder's last run captured.

import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkArgv } from "../../../runner/run/checks/checks.ts";
import { deliveredManifest, manifestDifferences } from "../../../runner/run/checks/delivered.ts";
import { assetsSinceLastRun } from "../../../runner/run/checks/last-assets.ts";
import { buildCompareFolder, StageOutputs } from "../../../runner/run/checks/stages.ts";
import { checkSummary } from "../../../runner/sam/check-summary.ts";
import { parseSamSync } from "../../../runner/sam/parse.ts";

function task(files: Record<string, string>, expectation: string, meta = ""): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-stages-"));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, ".."), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  const sam = join(dir, "task.md");
  writeFileSync(
    sam,
    `---\nname: stages\n${meta}---\n# T\n\n## To-do\nDo.\n\n## Expectation\n${expectation}\n`,
  );
  return sam;
}

const ASSETS = "check_assets: [checks/run.py, checks/compare.py]\nhidden_assets: [checks/ref.json]\n";
const FILES = { "checks/run.py": "", "checks/compare.py": "", "checks/ref.json": "{}", "solution.py": "" };

function messages(sam: string): string[] {
  const parsed = parseSamSync(sam);
  return parsed.diagnostics.map((d) => `${d.severity}: ${d.message}`);
}

describe("run and compare stages in a SAM", () => {
  it("reads a run stage with outputs and a compare stage; ```check hidden``` is a compare stage", () => {
    const sam = task(
      FILES,
      "- Values hold.\n  ```check outputs=out/values.json,out/b.txt\n  python3 checks/run.py > out/values.json\n  ```\n  ```compare timeout=20s\n  python3 checks/compare.py outputs/out/values.json checks/ref.json\n  ```\n  ```check hidden\n  cmp outputs/out/b.txt checks/ref.json\n  ```",
      ASSETS,
    );
    const parsed = parseSamSync(sam);
    expect(parsed.diagnostics).toEqual([]);
    if (!parsed.ok) throw new Error("not parsed");
    const checks = parsed.sam.root.items[0]?.checks ?? [];
    expect(checks[0]).toMatchObject({ outputs: ["out/values.json", "out/b.txt"] });
    expect(checks[0]?.stage).toBeUndefined();
    expect(checks[1]).toMatchObject({ stage: "compare", timeoutSec: 20 });
    expect(checks[1]?.outputs).toBeUndefined();
    expect(checks[2]).toMatchObject({ stage: "compare" });
    expect(checkSummary(parsed.sam.root)).toEqual({ runStages: 1, compareStages: 2, reviewOnly: [] });
  });

  it("refuses outputs that are not plain relative paths, and outputs on a compare stage", () => {
    for (const bad of ["/etc/passwd", "../x", "a/../b", "out/*.json", "./x", "a//b"]) {
      const sam = task(FILES, `- Ok.\n  \`\`\`check outputs=${bad}\n  true\n  \`\`\``, ASSETS);
      expect(messages(sam).join("\n"), bad).toMatch(/is not a plain relative path in the task folder/);
    }
    const sam = task(FILES, "- Ok.\n  ```compare outputs=a.txt\n  python3 checks/compare.py\n  ```", ASSETS);
    expect(messages(sam).join("\n")).toMatch(/a compare stage .* declares no outputs/);
  });

  it("refuses a compare stage that names a task-folder file, or starts with an output", () => {
    const names = task(
      FILES,
      "- Ok.\n  ```compare\n  python3 checks/compare.py solution.py checks/ref.json\n  ```",
      ASSETS,
    );
    expect(messages(names).join("\n")).toMatch(
      /a compare stage reads `solution.py`, which is neither a check asset nor under outputs\/.*outputs=solution.py/,
    );
    const runs = task(FILES, "- Ok.\n  ```compare\n  outputs/run checks/ref.json\n  ```", ASSETS);
    expect(messages(runs).join("\n")).toMatch(/runs `outputs\/run`, a file the agent's work made/);
    const fine = task(
      FILES,
      "- Ok.\n  ```check outputs=values.txt\n  python3 checks/run.py > values.txt\n  ```\n  ```compare\n  python3 checks/compare.py outputs/values.txt checks\n  ```",
      ASSETS,
    );
    expect(messages(fine)).toEqual([]);
  });

  it("refuses a compare stage that runs, builds, sources or pipes an output, or takes an output that is code", () => {
    const runs = [
      "iverilog -o /tmp/sim checks/run.py outputs/rtl/adder.v && vvp -n /tmp/sim",
      "python3 checks/compare.py outputs/solution.py checks/ref.json",
      "cat outputs/x | sh",
      "sh < outputs/x",
      'bash -c "$(cat outputs/x)"',
      "cd outputs && sh x.sh",
      ". outputs/x",
      "source outputs/x",
      "timeout 10 bash outputs/x",
      "true; outputs/x",
      "test -f checks/ref.json && outputs/x",
      "env X=1 outputs/x",
      "make -f outputs/build",
      "gfortran -o /tmp/p outputs/prog",
    ];
    for (const command of runs) {
      const sam = task(FILES, `- Ok.\n  \`\`\`compare\n  ${command}\n  \`\`\``, ASSETS);
      expect(messages(sam).join("\n"), command).toMatch(
        /^error: a compare stage .*(code|agent's work|working folder)/m,
      );
    }
    const data = [
      "python3 checks/compare.py outputs/out/values.json checks/ref.json",
      "cmp outputs/result.txt checks/ref.json",
      "diff -u checks/ref.json outputs/results/stats.txt",
      'test "$(cat checks/ref.json)" = "$(cat outputs/result.txt)" || { diff checks/ref.json outputs/result.txt; exit 1; }',
    ];
    const run = "- Ok.\n  ```check outputs=out/values.json,result.txt,results/stats.txt\n  true\n  ```\n";
    for (const command of data) {
      const sam = task(FILES, `${run}  \`\`\`compare\n  ${command}\n  \`\`\``, ASSETS);
      expect(messages(sam), command).toEqual([]);
    }
  });

  it("warns where a check forces its own success; a bare `true` is no warning", () => {
    for (const forced of [
      "python3 checks/run.py || true",
      "python3 checks/run.py; exit 0",
      "set +o pipefail; a | b",
    ]) {
      const sam = task(FILES, `- Ok.\n  \`\`\`check\n  ${forced}\n  \`\`\``, ASSETS);
      expect(messages(sam).join("\n"), forced).toMatch(/exit status is forced to 0/);
    }
    expect(messages(task(FILES, "- Ok.\n  ```check\n  true\n  ```", ASSETS)).join("\n")).not.toMatch(
      /forced/,
    );
  });

  it("lists the Expectation items no check covers", () => {
    const sam = task(
      FILES,
      "- Has one.\n  ```check\n  test -f x\n  ```\n- TopModule does not instantiate RefModule.",
    );
    const parsed = parseSamSync(sam);
    if (!parsed.ok) throw new Error("not parsed");
    expect(checkSummary(parsed.sam.root).reviewOnly).toEqual([
      { id: "root/e2", text: "TopModule does not instantiate RefModule." },
    ]);
  });
});

describe("what the runner copies and builds for the stages", () => {
  it("a check script runs with pipefail: a failing command before `| tail` fails it", () => {
    const [shell, ...args] = checkArgv("false | tail -n 1");
    expect(() => execFileSync(shell ?? "bash", args)).toThrow();
    const [ok, ...okArgs] = checkArgv("true | tail -n 1");
    expect(() => execFileSync(ok ?? "bash", okArgs)).not.toThrow();
  });

  it("copies declared outputs as data: no link followed, no FIFO opened, a missing one named", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-outputs-"));
    mkdirSync(join(dir, "out"));
    writeFileSync(join(dir, "out", "values.json"), "[1,2]");
    symlinkSync("/etc/passwd", join(dir, "out", "link.txt"));
    execFileSync("mkfifo", [join(dir, "out", "fifo")]);
    writeFileSync(join(dir, "secret"), "s");
    symlinkSync(dir, join(dir, "loop"));
    const outputs = new StageOutputs(join(dir, "..", `${statSync(dir).ino}-outputs`));
    const problems = outputs.collect(dir, [
      "out/values.json",
      "out/link.txt",
      "out/fifo",
      "missing.txt",
      "loop/secret",
    ]);
    expect(problems).toHaveLength(4);
    expect(problems.join("\n")).toMatch(/missing.txt was not produced/);
    expect(readdirSync(outputs.dir)).toEqual(["out"]);
    expect(readdirSync(join(outputs.dir, "out"))).toEqual(["values.json"]);
    expect(statSync(join(outputs.dir, "out", "values.json")).mode & 0o777).toBe(0o444);
  });

  it("refuses and does not copy an output whose format names another file, or that holds a hidden asset's name", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-outputs-format-"));
    mkdirSync(join(dir, "out"));
    writeFileSync(
      join(dir, "out", "r.xml"),
      '<!DOCTYPE r [<!ENTITY x SYSTEM "/task/checks/ref.json">]><r>&x;</r>',
    );
    writeFileSync(join(dir, "out", "log.txt"), "compared with checks/ref.json\n");
    writeFileSync(join(dir, "out", "v.txt"), "42\n");
    const outputs = new StageOutputs(join(dir, "..", `${statSync(dir).ino}-outputs`), ["checks/ref.json"]);
    const problems = outputs.collect(dir, ["out/r.xml", "out/log.txt", "out/v.txt"]);
    expect(problems).toEqual([
      expect.stringMatching(
        /^declared output out\/r.xml is refused: it is XML holding a DOCTYPE that declares entities, naming /,
      ),
      expect.stringMatching(
        /^declared output out\/log.txt is refused: it is a file holding the name of a hidden check asset, naming checks\/ref.json;/,
      ),
    ]);
    expect(readdirSync(join(outputs.dir, "out"))).toEqual(["v.txt"]);
  });

  it("builds the compare folder from the runner's copies of the assets and the outputs, nothing else", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-compare-"));
    const pristine = join(root, "pristine");
    mkdirSync(join(pristine, "checks"), { recursive: true });
    writeFileSync(join(pristine, "checks", "compare.sh"), "exit 0");
    writeFileSync(join(pristine, "checks", "ref.json"), "{}");
    writeFileSync(join(pristine, "task.md"), "sam");
    const outputs = join(root, "outputs");
    mkdirSync(join(outputs, "out"), { recursive: true });
    writeFileSync(join(outputs, "out", "v.txt"), "1");
    chmodSync(join(outputs, "out", "v.txt"), 0o755);
    const dest = join(root, "compare");
    buildCompareFolder(
      dest,
      pristine,
      {
        files: [
          { rel: "task.md", kind: "sam", hidden: false, sha256: "", mode: 0o644 },
          { rel: "checks/compare.sh", kind: "asset", hidden: false, sha256: "", mode: 0o755 },
          { rel: "checks/ref.json", kind: "asset", hidden: true, sha256: "", mode: 0o644 },
        ],
        folders: ["checks"],
      },
      outputs,
    );
    expect(readdirSync(dest).sort()).toEqual(["checks", "outputs"]);
    expect(readdirSync(join(dest, "checks")).sort()).toEqual(["compare.sh", "ref.json"]);
    expect(statSync(join(dest, "checks", "compare.sh")).mode & 0o111).not.toBe(0);
    expect(statSync(join(dest, "outputs", "out", "v.txt")).mode & 0o777).toBe(0o444);
  });

  it("the manifest of what the checks judged sees a same-size rewrite, an addition and a removal", async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-delivered-"));
    writeFileSync(join(dir, "solution.py"), "return 1\n");
    writeFileSync(join(dir, "gone.txt"), "x");
    const before = await deliveredManifest(dir);
    writeFileSync(join(dir, "solution.py"), "return 2\n");
    writeFileSync(join(dir, "new.txt"), "y");
    execFileSync("rm", [join(dir, "gone.txt")]);
    expect(manifestDifferences(before, await deliveredManifest(dir)).sort()).toEqual([
      "gone.txt removed",
      "new.txt added",
      "solution.py changed",
    ]);
    expect(manifestDifferences(before, before)).toEqual([]);
  });

  it("names the assets that differ from what the folder's last run captured", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-last-"));
    const set = (hash: string) => ({
      files: [{ rel: "checks/c.py", kind: "asset" as const, hidden: false, sha256: hash, mode: 0o644 }],
      folders: [],
    });
    expect(assetsSinceLastRun(home, "/t", "run-1", set("aa"))).toBeUndefined();
    expect(assetsSinceLastRun(home, "/t", "run-2", set("aa"))).toBeUndefined();
    expect(assetsSinceLastRun(home, "/t", "run-3", set("bb"))).toEqual({
      since: "run-2",
      files: [{ rel: "checks/c.py", was: "aa", now: "bb" }],
    });
    expect(assetsSinceLastRun(home, "/other", "run-4", set("cc"))).toBeUndefined();
  });
});
