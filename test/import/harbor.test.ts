// `scifi import harbor` on the two Harbor task fixtures (test/fixtures/harbor/): what maps, what is
// listed as not mapped, that the SAM folders validate through the real CLI, and the precise errors
// for malformed tasks. The runs with and without the solution are in harbor.e2e.test.ts.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HarborImport, HarborImportError, importHarbor } from "../../runner/import/harbor.ts";
import { runScifi } from "../helpers/cli.ts";
import { REPO } from "../loop/harness.ts";

const FIXTURES = join(REPO, "test", "fixtures", "harbor");
let root: string;
const imported: Record<string, HarborImport> = {};

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "scifi-harbor-"));
  for (const name of ["word-count", "csv-stats"])
    imported[name] = importHarbor(join(FIXTURES, name), join(root, name));
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A copy of a fixture to break. */
function copy(name: string): string {
  const dir = mkdtempSync(join(root, `${name}-`));
  cpSync(join(FIXTURES, name), dir, { recursive: true });
  return dir;
}

const attempt =
  (dir: string, options = {}) =>
  () =>
    importHarbor(dir, join(dir, "..", `${dir.split("/").at(-1)}-out`), options);

describe("scifi import harbor", () => {
  it("maps the instruction, the limits and the tests (reward.txt) of a Terminal-Bench style task", () => {
    const r = imported["word-count"] as HarborImport;
    const sam = readFileSync(r.sam, "utf8");
    expect(sam).toMatch(/^---\nname: word-count\nwalltime: 360s\ncpus: 1\nmemory: 2048M\ndifficulty: easy\n/);
    expect(sam).toContain(
      "hidden_assets: [checks/harbor/tests/expected.txt, checks/harbor/tests/test.sh, checks/harbor/verify.sh]",
    );
    // The instruction's own heading sits inside the To-do, two levels down.
    expect(sam).toContain("## To-do\n### Count words\n\n`/app/input.txt` holds a short text.");
    expect(sam).toContain("```check timeout=1m outputs=counts.txt\n  ls -l -- counts.txt\n  ```");
    expect(sam).toContain("```compare timeout=60s\n  bash checks/harbor/verify.sh\n  ```");
    expect(r.outputs).toEqual(["counts.txt"]);
    // The starting file from the Dockerfile's COPY, and the tests with Harbor's paths rewritten.
    expect(readFileSync(join(r.outDir, "input.txt"), "utf8")).toContain("quick brown fox");
    const test = readFileSync(join(r.outDir, "checks/harbor/tests/test.sh"), "utf8");
    expect(test).toContain("diff -u /task/checks/harbor/tests/expected.txt /task/outputs/counts.txt");
    expect(test).toContain("echo 1 > /task/.harbor/verifier/reward.txt");
    expect(test).not.toMatch(/(?<![\w/])\/(app|tests|logs)\//);
    expect(r.unmapped).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^environment\.allow_internet is not set: Harbor allows the internet by default/,
        ),
        expect.stringMatching(/^Dockerfile line 1: `FROM debian:bookworm-slim`/),
        expect.stringMatching(/^Dockerfile line 2: `RUN apt-get update/),
        expect.stringMatching(/^environment storage 10240 MB/),
        expect.stringMatching(/^solution\/ is not copied/),
      ]),
    );
  });

  it("maps a task whose verifier writes reward.json, listing what scifi cannot grant", () => {
    const r = imported["csv-stats"] as HarborImport;
    const sam = readFileSync(r.sam, "utf8");
    expect(sam).toMatch(
      /^---\nname: csv-stats\nwalltime: 690s\ncpus: 2\nmemory: 1024M\ndifficulty: medium\n/,
    );
    expect(sam).toContain("# Summary statistics of a CSV column");
    expect(sam).not.toContain("network:");
    expect(readFileSync(join(r.outDir, "data/values.csv"), "utf8")).toMatch(/^id,value\n/);
    expect(r.outputs).toEqual(["stats.json"]);
    const notes = readFileSync(join(r.outDir, "harbor-import.md"), "utf8");
    for (const line of [
      "environment.gpu_types A100: scifi requests a number of GPUs, not their type",
      "verifier.env (STATS_TOLERANCE): scifi passes no environment variables into a sandbox; values not copied",
      'agent.user = "agent": sandboxes run as the invoking user, never another',
      "Dockerfile line 1: `FROM python:3.12-slim`",
      "Dockerfile line 2: `RUN pip install --no-cache-dir numpy==2.1.0`",
    ])
      expect(notes).toContain(line);
    expect(notes).not.toContain("1e-6"); // an environment variable's value is never copied
  });

  it("the imported folders validate with the real CLI, and the CLI prints what was not mapped", async () => {
    const out = join(root, "cli-word-count");
    const imported = await runScifi(
      root,
      ["import", "harbor", join(FIXTURES, "word-count"), "-o", out, "--no-audit"],
      60_000,
    );
    expect(imported.code).toBe(0);
    expect(imported.stdout).toContain(`${out}/task.md`);
    expect(imported.stdout).toMatch(/not mapped:\n {2}- environment\.allow_internet is not set/);
    const valid = await runScifi(root, ["validate", out, join(root, "csv-stats")], 60_000);
    expect(valid.stderr).toBe("");
    expect(valid.code).toBe(0);
    expect(valid.stdout).toContain(
      "word-count: 1 SAM, 2 checks; hidden from the agents: checks/harbor/tests/expected.txt",
    );
    expect(valid.stdout).toContain("csv-stats: 1 SAM, 2 checks");
    const again = await runScifi(
      root,
      ["import", "harbor", join(FIXTURES, "word-count"), "-o", out, "--no-audit"],
      60_000,
    );
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("exists and is not an empty folder");
  });

  it("says precisely what is wrong with a malformed task", () => {
    const noInstruction = copy("word-count");
    rmSync(join(noInstruction, "instruction.md"));
    expect(attempt(noInstruction)).toThrow(
      new RegExp(`${noInstruction}/instruction\\.md: missing; a Harbor task folder holds`),
    );

    const badToml = copy("word-count");
    writeFileSync(
      join(badToml, "task.toml"),
      'version = "1.0"\n[agent]\ntimeout_sec = 300.0\ntimeout_sec = 10\n',
    );
    expect(attempt(badToml)).toThrow(
      new RegExp(`${badToml}/task\\.toml:4:1: not valid TOML: trying to redefine`),
    );

    const unclosed = copy("word-count");
    writeFileSync(join(unclosed, "task.toml"), '[metadata]\ndifficulty = "easy\n');
    expect(attempt(unclosed)).toThrow(/task\.toml:2:\d+: not valid TOML/);

    const badType = copy("word-count");
    writeFileSync(join(badType, "task.toml"), '[agent]\ntimeout_sec = "ten minutes"\n');
    expect(attempt(badType)).toThrow(
      /task\.toml: agent\.timeout_sec must be a positive number of seconds \(e\.g\. 120\.0\), got "ten minutes"/,
    );

    const badMemory = copy("csv-stats");
    writeFileSync(join(badMemory, "task.toml"), '[environment]\nmemory = "lots"\n');
    expect(attempt(badMemory)).toThrow(/environment\.memory must be a size like "4G" or "512M", got "lots"/);

    const steps = copy("word-count");
    writeFileSync(join(steps, "task.toml"), '[[steps]]\nname = "a"\n[[steps]]\nname = "b"\n');
    expect(attempt(steps)).toThrow(/a multi-step task \(\[\[steps\]\], 2\) cannot be imported/);

    const noTests = copy("word-count");
    rmSync(join(noTests, "tests", "test.sh"));
    expect(attempt(noTests)).toThrow(/tests\/test\.sh: missing/);

    const link = copy("word-count");
    symlinkSync("/etc/passwd", join(link, "tests", "passwd"));
    expect(attempt(link)).toThrow(/tests\/passwd is not a regular file or folder \(a link\?\); refusing/);

    expect(attempt(join(root, "nowhere"))).toThrow(HarborImportError);
  });

  it("refuses tests that run the agent's code, and ones that name no file of the agent's", () => {
    const runsCode = copy("word-count");
    writeFileSync(join(runsCode, "tests", "test.sh"), "python3 /app/count.py > /logs/verifier/reward.txt\n");
    expect(attempt(runsCode)).toThrow(
      /tests\/test\.sh runs \/app\/count\.py, the agent's file, as a program/,
    );
    for (const line of [
      "/app/run-me --check",
      "x=1; bash /app/steps.txt",
      "source /app/env.txt",
      "out=$(python3 -u /app/data.bin)",
    ]) {
      const runsData = copy("word-count");
      writeFileSync(join(runsData, "tests", "test.sh"), `${line}\necho 1 > /logs/verifier/reward.txt\n`);
      expect(attempt(runsData), line).toThrow(
        /tests\/test\.sh runs \/app\/\S+, the agent's file, as a program/,
      );
    }
    // Code handed over as an output at all (here read by grep) is refused too: outputs are data.
    const readsCode = copy("word-count");
    writeFileSync(
      join(readsCode, "tests", "test.sh"),
      "grep -q pandas /app/aggregate.py && echo 1 > /logs/verifier/reward.txt\n",
    );
    expect(attempt(readsCode)).toThrow(
      /the tests run or read \/app\/aggregate\.py, the agent's code: a scifi compare stage reads/,
    );

    const noOutputs = copy("word-count");
    writeFileSync(join(noOutputs, "tests", "test.sh"), "echo 1 > /logs/verifier/reward.txt\n");
    expect(attempt(noOutputs)).toThrow(/the tests name no file under \/app .*--outputs FILE/);
    writeFileSync(
      join(noOutputs, "tests", "test.sh"),
      "pip install scifi-no-such-package==8.3.0 # secret-detail\necho 1 > /logs/verifier/reward.txt\n",
    );
    mkdirSync(join(root, "given"));
    // No image has that package (asked of the image; without Docker it cannot be asked): the
    // install cannot be mapped, so the import is refused, naming the line; with
    // --allow-unpassable it is imported and marked so.
    const refused =
      /^tests\/test\.sh:1: pip install scifi-no-such-package: (scifi-sci:local has no scifi-no-such-package|could not look inside scifi-sci:local with docker: .*)$/;
    expect(() => importHarbor(noOutputs, join(root, "given"), { outputs: ["result.txt"] })).toThrow(
      /the task cannot pass here[\s\S]*\n {2}tests\/test\.sh:1: pip install scifi-no-such-package: /,
    );
    const given = importHarbor(noOutputs, join(root, "given"), {
      outputs: ["result.txt"],
      allowUnpassable: true,
    });
    expect(given.outputs).toEqual(["result.txt"]);
    expect(given.unpassable).toEqual([expect.stringMatching(refused)]);
    // An install in a hidden test is named by program, package and line, never quoted (the notes
    // and the SAM are visible to the agent).
    expect(readFileSync(join(root, "given", "harbor-import.md"), "utf8")).not.toContain("secret-detail");
    expect(readFileSync(given.sam, "utf8")).toMatch(
      /\nunpassable: "imported with --allow-unpassable: .* at tests\/test\.sh:1 \(harbor-import\.md\)"\n/,
    );
  });
});
