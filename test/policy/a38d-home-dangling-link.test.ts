// a38d-home-dangling-link (fixed): a scifi home spelled through a link into the task folder whose
// target is not there yet ends in a raw ENOENT, exit 1, instead of `task-folder-denied`, exit 2.
//
// The promise (docs/sandbox.md, `task-folder-denied`: "compared by real path, links resolved, also
// for a denied path not there yet (a fresh home's `runs/` is resolved through its deepest existing
// folder, so `SCIFI_HOME` spelled through a link into the task folder is refused at the start, exit
// 2, nothing created)"; style: errors say what failed and what to do).
// What happened: `ln -s <task>/home <x>/h; SCIFI_HOME=<x>/h scifi run <task>/task.md`: the link
// dangles (its target `<task>/home` does not exist), so the deepest existing folder of
// `<x>/h/runs` is `<x>` and the link is never read; the policy passes, and the task-folder lock's
// mkdir fails: "scifi run: ENOENT: no such file or directory, mkdir '<x>/h/.scifi/task-locks'",
// exit 1. Nothing is created in the task folder (mkdir does not follow the dangling link), so no
// record lands where the agent writes; the break is the message and the exit code.
// Fixed: a denied path not there yet is resolved through a dangling link on its way too (its target,
// resolved the same way; runner/policy/denied.ts realOrSelf).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..", "..");
const SAM = `---\nname: dang\n---\n# T\n\n## To-do\nWrite 42 to answer.txt.\n\n## Expectation\n- answer.txt holds 42.\n  \`\`\`check\n  grep -q 42 answer.txt\n  \`\`\`\n`;

describe("a38d: SCIFI_HOME through a dangling link into the task folder", () => {
  it("is refused as task-folder-denied, exit 2, nothing created", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38d-dangle-"));
    const task = join(root, "task");
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), SAM);
    symlinkSync(join(task, "home"), join(root, "h"));
    const model = `scripted:${join(ROOT, "test", "daemon", "fixtures", "trivial.yaml")}`;
    const out = spawnSync(
      process.execPath,
      [join(ROOT, "bin", "scifi.js"), "run", join(task, "task.md"), "--model", model, "--backend", "docker"],
      { env: { ...process.env, SCIFI_HOME: join(root, "h") }, encoding: "utf8", timeout: 60_000 },
    );
    expect(readdirSync(task)).toEqual(["task.md"]);
    expect(out.stderr).toMatch(/task-folder-denied/);
    expect(out.status).toBe(2);
  });
});
