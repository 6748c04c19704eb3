// a38d-check-task-no-hold (open; Docker): `scifi check-task` refuses a busy task folder at its start
// but holds no lock while it audits: a `scifi run` started during the audit is not refused.
//
// The promise (issue 38 point 3: "a second run ... on a task folder that a live run holds is refused";
// docs/check-task.md: "A task folder a live run holds is refused before anything is hashed or
// copied ...: it holds that run's half-done work, which the `untouched` audit would judge, and
// cache, as the task's", fixed in a38c).
// What happened: audit.ts calls refuseBusyTaskFolder once, hashes the folder (the cache key), then
// runs four or five audits one after another, each copying the task folder afresh. Nothing holds
// the folder in between: here, 1.3 s into a check-task, a second run's lockTaskFolder succeeds (it
// would lend the folder and write its agent's work there), and the audits after that copy the
// run's half-done work, cached under the hash of the folder as it was at the start. (`scifi
// critique <run>` takes the lock for its whole sandbox: runner/helpers/critique/command.ts.)
// Fixed: auditTask takes the task folder's lock for the whole audit (lockTaskFolder, released at its
// end), so a run started meanwhile is refused naming the check-task, as a second run would be.
import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { lockTaskFolder, TaskFolderBusy } from "../../runner/task-folder-lock.ts";
import { hasEngine } from "../helpers/engines.ts";

const CLI = resolve(import.meta.dirname, "..", "..", "bin", "scifi.js");
const SAM = `---\nname: ct\n---\n# T\n\n## To-do\nWrite 42 to answer.txt.\n\n## Expectation\n- answer.txt holds 42.\n  \`\`\`check\n  grep -q 42 answer.txt\n  \`\`\`\n`;

describe.skipIf(!hasEngine("docker"))("a38d: a run started while scifi check-task audits the folder", () => {
  it("is refused: check-task holds the folder while it audits", { timeout: 120_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38d-ct-"));
    chmodSync(root, 0o755);
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), SAM);
    const child = spawn(process.execPath, [CLI, "check-task", task], {
      env: { ...process.env, SCIFI_HOME: home },
      stdio: "ignore",
    });
    const exited = new Promise((done) => child.on("exit", done));
    try {
      const started = Date.now();
      while (!existsSync(join(home, "check-task", "work")) && Date.now() - started < 60_000)
        await new Promise((wait) => setTimeout(wait, 100));
      expect(existsSync(join(home, "check-task", "work"))).toBe(true);
      let second: unknown;
      try {
        lockTaskFolder(home, task, "20261204-000000-second-cccccc")();
      } catch (error) {
        second = error;
      }
      expect(second).toBeInstanceOf(TaskFolderBusy);
    } finally {
      await exited;
    }
  });
});
