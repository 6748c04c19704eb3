// Attack on `scifi ctl <run>` (runner/cli/commands/ctl.ts findRun), found by attacker a41. Failed before fix-41a (now passes).
// Doc promise: docs/ctl.md: `<run>` is "a run id as under `<home>/runs/`" or a daemon task's
// name; "any action on a run that ... does not exist [is] refused, exit 2".
// What happened: the run id check is `/^[\w.-]+$/`, which `..` and `.` pass, and the folder is
// `join(<home>/runs, id)`: `scifi ctl .. limits --iterations 9` reads `<home>/state.json`
// (`.` reads `<home>/runs/state.json`) and, when one is there (a copied run, a backup, a test's
// fixture), writes a decision into `<home>/control/` and prints "run ..: iterations 5 → 9;
// applied when the run resumes", exit 0. `ctl .. resume` of such a folder would start
// `scifi run --resume ..`. No run is named `..`.
// Suggested fix: use the run-id pattern the runner makes ids with (or refuse `.` and `..` and any
// id that resolves outside `<home>/runs/`), in ctl and in every command that takes a run id.
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../../../runner/run/session/limits.ts";
import { REPO } from "../harness.ts";

const exec = promisify(execFile);

it.each(["..", "."])("a41: scifi ctl %s is refused (no run is named so)", async (name) => {
  const home = join(mkdtempSync(join(tmpdir(), "a41-dotdot-")), "home");
  mkdirSync(join(home, "runs"), { recursive: true });
  // A state.json at the home's top (a copied run folder's, say).
  writeFileSync(
    join(home, "state.json"),
    JSON.stringify({
      version: 1,
      runId: "copied",
      phase: "work",
      iteration: 1,
      attempts: { root: 1 },
      spent: { tokens: 0, usd: 0, elapsedMs: 1000, at: new Date().toISOString() },
      limits: { ...DEFAULT_LIMITS },
      resumes: 0,
    }),
  );
  const code = await exec(
    process.execPath,
    [join(REPO, "bin/scifi.js"), "ctl", name, "limits", "--iterations", "9"],
    {
      env: { ...process.env, SCIFI_HOME: home },
    },
  ).then(
    () => 0,
    (e: { code: number }) => e.code,
  );
  expect(code).toBe(2);
  expect(existsSync(join(home, "control"))).toBe(false);
});
