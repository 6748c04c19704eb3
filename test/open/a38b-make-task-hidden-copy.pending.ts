// Attack on issue 38's "one gate" (runner/sam/gate.ts checkSamText, the gate `scifi make-task` runs
// on its draft: runner/helpers/make-task/make-task.ts validateDraft), found by attacker a38b.
// FAILS today.
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
// Move to test/sam/ once fixed.
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
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

describe("a38b: make-task's draft through the one gate", () => {
  it("reports a hidden asset's copy in the folder as scifi validate does", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-a38b-draft-"));
    mkdirSync(join(dir, "checks"));
    mkdirSync(join(dir, "data"));
    const reference = `${Array.from({ length: 200 }, (_, i) => `mu=${i * 0.5} sigma=${i * 0.25}`).join("\n")}\n`;
    writeFileSync(join(dir, "checks", "ref.txt"), reference);
    writeFileSync(join(dir, "data", "ref-copy.txt"), reference);
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
});
