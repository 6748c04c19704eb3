// a38c-home-through-link: a task folder that holds the scifi home is refused only when the home is
// spelled by its real path, or once its runs/ exists.
//
// The promise (docs/sandbox.md `task-folder-denied`: "a task folder that is, holds or lies in a
// denied path", the home's runs/, memory/, .scifi/ ...; docs/ctl.md: "The run folder is the
// runner's: it is never mounted into a sandbox"; issue 38 point 2: a refusal before anything is
// created, the same whatever the spelling).
// What happened: deniedPaths (runner/policy/denied.ts realOrSelf) resolves a denied path's links
// only when it exists. With SCIFI_HOME=/x/link/home (/x/link -> /x/task) in a fresh home, the
// home's runs/ does not exist at the start's grant, `/x/link/home/runs` is not inside the real task
// folder `/x/task`, and the start goes on: `scifi run` created the run folder (state.json,
// history.jsonl, audit.jsonl, the report) inside the task folder, and only the sandbox's own grant
// refused it then: `FAILED: grant: policy refused [task-folder-denied] ...`, exit 1 (a failed run,
// counted as the model's in an eval). The same home by its real path: exit 2, nothing created.
// Suggested fix: resolve a denied path that does not exist yet through its deepest existing
// ancestor (realpath of that, plus the rest), or take realpath(home) once in homePaths.
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PolicyRefused } from "../../runner/policy/refused.ts";
import { resolveSpec } from "../../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY } from "../../runner/policy/site.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";

const SAM =
  "---\nname: t\n---\n# T\n\n## To-do\nWrite out.txt.\n\n## Expectation\n- out.txt exists.\n  ```check\n  test -f out.txt\n  ```\n";

describe("a38c: a fresh scifi home inside the task folder, spelled through a link", () => {
  it("is refused at the start's grant, as its real spelling is", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38c-home-link-"));
    const task = join(root, "task");
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), SAM);
    symlinkSync(task, join(root, "link"));
    const parsed = parseSamSync(join(task, "task.md"));
    if (!parsed.ok) throw new Error("the fixture SAM does not parse");
    const grant = (home: string) => () =>
      resolveSpec(parsed.sam, BUILTIN_SITE_POLICY, { home, runId: "run-1", user: { uid: 1234, gid: 5678 } });
    // The real spelling: refused (held).
    expect(grant(join(task, "home"))).toThrow(PolicyRefused);
    // Through the link: granted today; its runs/ would be made inside /task.
    expect(grant(join(root, "link", "home"))).toThrow(PolicyRefused);
  });
});
