// a38c-home-through-link (fixed): a task folder that holds the scifi home was refused only when the
// home was spelled by its real path, or once its runs/ existed.
//
// The promise (docs/sandbox.md `task-folder-denied`: "a task folder that is, holds or lies in a
// denied path", the home's runs/, memory/, .scifi/ ...; docs/ctl.md: "The run folder is the
// runner's: it is never mounted into a sandbox"; issue 38 point 2: a refusal before anything is
// created, the same whatever the spelling).
// What happened (before the fix): deniedPaths (runner/policy/denied.ts realOrSelf) resolved a
// denied path's links only when it existed. With SCIFI_HOME=/x/link/home (/x/link -> /x/task) in a
// fresh home, the home's runs/ does not exist at the start's grant, `/x/link/home/runs` is not
// inside the real task folder `/x/task`, and the start goes on: `scifi run` created the run folder
// (state.json, history.jsonl, audit.jsonl, the report) inside the task folder, and only the
// sandbox's own grant refused it then: `FAILED: grant: policy refused [task-folder-denied] ...`,
// exit 1 (a failed run, counted as the model's in an eval). The same home by its real path: exit 2,
// nothing created.
// Fixed: deniedPaths resolves a denied path that does not exist yet through its deepest existing
// ancestor (realpath of that, plus the rest), so the link's spelling is refused at the start's grant.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
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
    // Through the link: refused too (its runs/ would be made inside the task folder).
    expect(grant(join(root, "link", "home"))).toThrow(PolicyRefused);
  });
});

const CLI = new URL("../../bin/scifi.js", import.meta.url).pathname;

describe("a38c: scifi run with a fresh home inside the task folder, spelled through a link", () => {
  it("exits 2 at the start and creates nothing (no home, no run folder)", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38c-home-link-cli-"));
    const task = join(root, "task");
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), SAM);
    symlinkSync(task, join(root, "link"));
    const script = join(root, "script.yaml");
    writeFileSync(script, "work: []\n");
    const result = await promisify(execFile)(
      process.execPath,
      [CLI, "run", task, "--model", `scripted:${script}`],
      { env: { ...process.env, SCIFI_HOME: join(root, "link", "home") }, timeout: 60_000 },
    ).then(
      () => ({ code: 0, stderr: "" }),
      (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain("task-folder-denied");
    expect(existsSync(join(task, "home"))).toBe(false);
    expect(readdirSync(task)).toEqual(["task.md"]);
  });
});
