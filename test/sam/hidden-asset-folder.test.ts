// A folder named in `hidden_assets` (or `check_assets`): the runner keeps, restores and hides check
// assets file by file, and the hidden-content search fingerprints each hidden file. A folder was
// accepted by the parser, never fingerprinted (its copies elsewhere in the task folder not searched
// for), and a run of it failed at start. It is refused by name, before anything runs; listed file by
// file, its files are hidden and their copies found.
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hiddenContentDiagnostics } from "../../runner/sam/hidden-content.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { runScifi } from "../helpers/cli.ts";
import { hiddenTaskSam, SECRET } from "./hidden-task.ts";

/** The shared hidden task, its reference in a folder of its own (checks/ref/), copied to copy.json. */
function task(hidden: string): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-hidden-folder-"));
  mkdirSync(join(dir, "checks", "ref"), { recursive: true });
  writeFileSync(join(dir, "checks", "ref", "secret.json"), SECRET);
  writeFileSync(join(dir, "checks", "compare.py"), "import sys\n");
  cpSync(join(dir, "checks", "ref", "secret.json"), join(dir, "copy.json"));
  const sam = hiddenTaskSam("hidden-folder")
    .replace("hidden_assets: [checks/secret.json]", `hidden_assets: [${hidden}]`)
    .replace("outputs/result.txt checks/secret.json", "outputs/result.txt");
  writeFileSync(join(dir, "task.md"), sam);
  return dir;
}

describe("a folder in hidden_assets", () => {
  it.each(["checks/ref", "checks/ref/"])("%s is refused, naming a file to list instead", (hidden) => {
    const parsed = parseSamSync(join(task(hidden), "task.md"));
    expect(parsed.ok).toBe(false);
    expect(parsed.diagnostics.filter((d) => d.severity === "error").map((d) => d.message)).toEqual([
      `check asset \`${hidden}\` is a folder: list the files in it one by one (e.g. \`checks/ref/secret.json\`); the runner keeps its own copy of each check asset file, hides each hidden one and searches the task folder for copies of its content`,
    ]);
  });

  it("scifi validate and scifi run refuse it before anything starts", async () => {
    const dir = task("checks/ref");
    const home = mkdtempSync(join(tmpdir(), "scifi-hidden-folder-home-"));
    const validate = await runScifi(home, ["validate", join(dir, "task.md")], 60_000);
    expect(validate.code).toBe(1);
    expect(validate.stdout + validate.stderr).toContain("check asset `checks/ref` is a folder");
    const run = await runScifi(
      home,
      ["run", join(dir, "task.md"), "--model", "scripted:/nonexistent.yaml"],
      60_000,
    );
    expect(run.code).toBe(2);
    expect(run.stdout + run.stderr).toContain("check asset `checks/ref` is a folder");
  });

  it("listed file by file, the file is hidden and its copy elsewhere in the folder is found", () => {
    const parsed = parseSamSync(join(task("checks/ref/secret.json"), "task.md"));
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
    expect(hiddenContentDiagnostics(parsed.sam).map((d) => d.message)).toEqual([
      expect.stringContaining(
        "the hidden asset checks/ref/secret.json can be read by the agents elsewhere in the task folder: an identical copy at copy.json",
      ),
    ]);
  });
});
