// Attacker a41d (issue 41, signals; fixed; trust.md "the records say what happened"): what a run's
// records and its terminal say after a person's SIGTERM in the middle of a phase. Real Docker,
// `scifi run`, a scripted model (labelled scripted).
//
// Doc promise: docs/loop.md: on SIGTERM `scifi run` "stops every live sandbox ... prints the resume
// command and exits 143; the last completed phase is already on disk (the run has no run_end: it is
// unfinished, not failed)"; README exit 4: a sandbox "killed from outside" is `sandbox_died`, "not
// the task's failure". The runner's own stop is no sandbox death and no check result.
// What happened (measured): during the checks the run's own stop of its sandbox is taken for a
// death: the history of the unfinished run gets `sandbox_died` ("the docker sandbox ... stopped
// running under the run (a command ended by a signal)"), and the terminal shows `check root/check-1 FAILED
// (exit 137)` just before "SIGTERM: stopping the sandbox": the person reads a failed check that no
// check produced; the report of a run left there shows the death. (A resume cuts the interrupted
// phase's events; a run never resumed keeps them.) During the work `scifi run` records no death
// (held), but a daemon worker SIGTERMed during the work recorded one (seen once, not tested here).
// Fixed: once a signal's interruption stopped the run (RunInterrupted on its stop), a sandbox found
// dead is the run's own stop: revive.ts throws the interruption instead of counting a death, so no
// sandbox_died and no check result is recorded or printed for it (runner/run/session/sandboxes.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { sigtermIn, unmountAll, type Workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";

let ws: Workspace | undefined;
afterEach(() => {
  if (ws) unmountAll(ws.root);
});

function history(home: string): string {
  const [run = ""] = readdirSync(join(home, "runs"));
  return readFileSync(join(home, "runs", run, "history.jsonl"), "utf8");
}

describe.skipIf(!hasEngine("docker"))(
  "a41d: a SIGTERM is recorded as an interruption (docker)",
  { timeout: 180_000 },
  () => {
    it("during the checks: no check failure printed, no sandbox death on the history", async () => {
      const r = await sigtermIn(/phase checks/, 3_000, { checkSec: 60 });
      ws = r.ws;
      expect(r.code, r.err).toBe(143);
      expect(r.err).not.toMatch(/check root\/check-1 FAILED \(exit 137\)/);
      expect(history(r.ws.home)).not.toMatch(/"type":"sandbox_died"/);
    });
  },
);
