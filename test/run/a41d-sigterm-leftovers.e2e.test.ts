// Attacker a41d (issue 41, signals): SIGTERM to `scifi run` (Node 24 directly; the same through the
// launcher on Node 20) in the middle of a phase. Real Docker, a scripted model (labelled scripted).
//
// Doc promise: docs/loop.md: "On SIGINT/SIGTERM/SIGHUP `scifi run` stops every live sandbox (work,
// checks or review)"; "Every exit restores ... and only then returns the hidden assets to the task
// folder"; only "a process killed with SIGKILL leaves the hidden assets in runs/<id>/pristine/ until
// --resume", and only "a view left mounted by a run that died (SIGKILL, a crash)" waits for a
// resume or `scifi sandbox prune`. docs/ctl.md: "the task folder restored and the hidden check
// assets put back as at every exit". The brief: nothing left running, no folder left owned by the
// sandbox user.
// What happened (measured): the run exits 143 and its containers are gone, but
// 1. SIGTERM during the work: the task's hidden check asset (checks/expected_output.txt) is not put
//    back into the user's task folder: it is missing there until a `--resume` ends the run;
// 2. SIGTERM during the checks: the check's view stays mounted (an overlay at
//    runs/<id>/checks-copy whose lower layer is the user's task folder), and checks-copy,
//    checks-copy.layers/upper and .check are left owned by the sandbox's uid (nobody); a SIGTERM
//    during the compare stage leaves runs/<id>/compare (the hidden reference in it) owned by nobody.
// Why: runner/sandbox/live.ts onSignal stops only the tracked sandboxes, then process.exit(128+n):
// the run's own `finally` (runner/run/start.ts: restoreAtEnd, returnHidden; the check's view
// teardown) never runs.
// Fixed (fix41-signals): the signal aborts the run's stop with a RunInterrupted (runner/run-ending.ts;
// `scifi run` and the daemon worker pass it as the run's signal); the driver throws it on with no
// outcome and no checkpoint of the cut phase, so the run's own exit (checks' view teardown, restore,
// hidden-asset return) runs; sandbox/live.ts stops the live sandboxes meanwhile and exits 128+n
// once the command is done (FINISH_MS = 20 s at most; a second signal still forces the exit).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  containers,
  HIDDEN,
  mountsUnder,
  ownedByOthers,
  sigtermIn,
  unmountAll,
  type Workspace,
} from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";

let ws: Workspace | undefined;
afterEach(() => {
  if (ws) unmountAll(ws.root);
});

/** sigtermIn, the workspace kept for afterEach's unmount. */
async function sigtermDuring(phase: RegExp, afterMs: number, opts: { workSec?: number; checkSec?: number }) {
  const ran = await sigtermIn(phase, afterMs, opts);
  ws = ran.ws;
  return ran;
}

describe.skipIf(!hasEngine("docker"))(
  "a41d: SIGTERM ends `scifi run` cleanly (docker)",
  { timeout: 180_000 },
  () => {
    it("during the work: the hidden check asset is back in the task folder", async () => {
      const { code, err, ws } = await sigtermDuring(/phase work/, 4_000, { workSec: 240 });
      expect(code, err).toBe(143);
      expect(containers(ws.home)).toBe("");
      expect(
        existsSync(join(ws.taskDir, HIDDEN)),
        `${HIDDEN} missing from the task folder after SIGTERM`,
      ).toBe(true);
    });

    it("during the checks: no check view left mounted, nothing left owned by the sandbox's uid", async () => {
      const { code, err, ws } = await sigtermDuring(/phase checks/, 3_000, { checkSec: 60 });
      expect(code, err).toBe(143);
      expect(containers(ws.home)).toBe("");
      expect(mountsUnder(ws.root), "mounts left after SIGTERM").toEqual([]);
      expect(
        ownedByOthers(ws.root, process.getuid?.() ?? 0),
        "paths left owned by the sandbox's uid",
      ).toEqual([]);
      expect(readFileSync(join(ws.taskDir, "task.md"), "utf8")).toContain("gfortran");
    });
  },
);
