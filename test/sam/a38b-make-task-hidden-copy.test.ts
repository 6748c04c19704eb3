// Attack on issue 38's "one gate" (runner/sam/gate.ts checkSamText, the gate `scifi make-task` runs
// on its draft: runner/helpers/make-task/make-task.ts validateDraft), found by attacker a38b.
// Fixed: runner/sam/gate.ts (checkSam and checkSamText are one gate).
// Doc promise: docs/sam-format.md "One gate for every way in": what `scifi validate` reports is one
// function, "and every way a SAM enters runs that same function and refuses what it reports as an
// error" (`scifi make-task`: "after the repairs, exit 2 ... no draft written"); docs/helpers.md:
// the draft "is validated by the gate every entry point runs (`scifi validate`'s own checks ... at
// the place the draft will be written)"; gate.ts: "What `scifi validate` reports ... on disk beyond
// the file too: a hidden asset's content reachable elsewhere in the task folder ... is an error".
// What happened: checkSam (validate, run, eval, daemon, import) adds hiddenContentDiagnostics; its
// twin for a draft, checkSamText, does not. A draft naming `hidden_assets: [checks/ref.txt]` for a
// folder that holds a copy of ref.txt (`data/ref-copy.txt`, or in .git) passes make-task's gate
// and is written (or, with --to-inbox, dropped into the daemon's inbox); `scifi validate` of the
// very file make-task wrote reports the error.
// Suggested fix: checkSamText runs the same on-disk checks as checkSam, against the folder the
// draft will be written to (hiddenContentDiagnostics on a SamDocument whose file is that path).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runMakeTask } from "../../runner/helpers/make-task/command.ts";
import { checkSam, checkSamText } from "../../runner/sam/gate.ts";

const SAM = [
  "---",
  "name: fit",
  "hidden_assets: [checks/ref.txt]",
  "---",
  "# Fit",
  "",
  "## To-do",
  "Fit the model; write outputs/fit.txt.",
  "",
  "## Expectation",
  "- The fit matches the reference.",
  "  ```check outputs=fit.txt",
  "  python3 fit.py > fit.txt",
  "  ```",
  "  ```compare",
  "  cmp outputs/fit.txt checks/ref.txt",
  "  ```",
  "",
].join("\n");

const errors = (r: ReturnType<typeof checkSam>) => r.diagnostics.filter((d) => d.severity === "error");

/** A task folder holding a hidden asset and a copy of it elsewhere. */
function folderWithCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-a38b-draft-"));
  mkdirSync(join(dir, "checks"));
  mkdirSync(join(dir, "data"));
  const reference = `${Array.from({ length: 200 }, (_, i) => `mu=${i * 0.5} sigma=${i * 0.25}`).join("\n")}\n`;
  writeFileSync(join(dir, "checks", "ref.txt"), reference);
  writeFileSync(join(dir, "data", "ref-copy.txt"), reference);
  return dir;
}

describe("a38b: make-task's draft through the one gate", () => {
  it("reports a hidden asset's copy in the folder as scifi validate does", () => {
    const dir = folderWithCopy();
    const file = join(dir, "task.md");
    // What make-task checks before writing the draft to `file`:
    const draft = checkSamText(SAM, file);
    // What `scifi validate file` says once it is written:
    writeFileSync(file, SAM);
    const validate = checkSam(file);
    expect(
      errors(validate)
        .map((d) => d.message)
        .join("\n"),
    ).toContain("ref-copy.txt");
    expect(errors(draft).map((d) => d.message)).toEqual(errors(validate).map((d) => d.message));
  });

  it("a draft for a folder that does not exist yet is judged (its asset missing), not a crash", () => {
    const dir = join(mkdtempSync(join(tmpdir(), "scifi-a38b-draft-")), "not-yet");
    const messages = errors(checkSamText(SAM, join(dir, "task.md"))).map((d) => d.message);
    expect(messages.join("\n")).toContain("checks/ref.txt");
  });

  it("scifi make-task (scripted model) asks for a repair with validate's error, then writes a draft validate accepts", async () => {
    const dir = folderWithCopy();
    const home = mkdtempSync(join(tmpdir(), "scifi-a38b-home-"));
    const out: string[] = [];
    const err: string[] = [];
    const code = await runMakeTask("Fit the model to data/ and compare with the reference", {
      model: `scripted:${join(import.meta.dirname, "..", "fixtures", "helpers", "make-task", "hidden-copy.yaml")}`,
      env: { ...process.env, SCIFI_HOME: home },
      cwd: dir,
      output: "task.md",
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    expect(err.join(""), out.join("")).toBe("");
    expect(code).toBe(0);
    const file = join(dir, "task.md");
    expect(out.join("")).toContain("valid after 2 tries");
    expect(readFileSync(file, "utf8")).not.toContain("hidden_assets");
    expect(errors(checkSam(file))).toEqual([]);
  });

  it("scifi make-task refuses to write a draft validate would refuse (exit 2, no file)", async () => {
    const dir = folderWithCopy();
    const home = mkdtempSync(join(tmpdir(), "scifi-a38b-home-"));
    const script = join(home, "always-hidden.yaml");
    const fixture = readFileSync(
      join(import.meta.dirname, "..", "fixtures", "helpers", "make-task", "hidden-copy.yaml"),
      "utf8",
    );
    // The first draft every time: its hidden asset's copy is never moved.
    const first = fixture.slice(fixture.indexOf("  - expect"), fixture.lastIndexOf("  - expect"));
    writeFileSync(script, `make_task:\n${first.repeat(5)}`);
    const err: string[] = [];
    const code = await runMakeTask("Fit the model", {
      model: `scripted:${script}`,
      env: { ...process.env, SCIFI_HOME: home },
      cwd: dir,
      output: "task.md",
      out: () => {},
      err: (t) => err.push(t),
    });
    expect(code).toBe(2);
    expect(err.join("")).toContain("data/ref-copy.txt");
    expect(existsSync(join(dir, "task.md"))).toBe(false);
  });
});
