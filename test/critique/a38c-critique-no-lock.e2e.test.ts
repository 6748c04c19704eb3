// a38c-critique-no-lock (fixed): `scifi critique <run>` lends a task folder that a live run holds.
//
// The promise (issue 38 point 3; docs/loop.md "One run uses a task folder at a time"; runner/
// task-folder-lock.ts): two users of one task folder would "lend, restore and judge the same files
// at once (as root, the second would record the sandbox's uid as every file's owner and give the
// folder back to it)"; whatever starts a sandbox on a folder a live run holds is refused, naming
// that run; never a folder left owned by the sandbox user.
// What happened: `scifi critique <run>` (runner/helpers/critique/command.ts) starts a sandbox on
// the finished run's task folder through backend.start, whose guard lends the folder to the
// sandbox user when scifi is root (sandbox/guard.ts lendRecorded), and it takes no task-folder
// lock and checks none (it only asks that the *old* run has ended). With a new run of the same
// folder live, the critique lends and gives back under it; started first, the new run's lend
// records uid 65534 as every entry's owner while the critique holds the folder, the critique's give
// back hands it to root under the live run, and the run's give back leaves it the sandbox user's.
// Seen (root runner, Docker): exit 0, a full critique, and the folder's owner went 0 -> 65534 -> 0
// while the other run's lock was held.
// Fixed: `scifi critique` refuses a folder a live run holds before it makes anything (exit 2, naming
// the run), and holds the folder's lock itself while its sandbox has it lent (docs/critique.md).
import { statSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCritiqueCommand } from "../../runner/helpers/critique/command.ts";
import { lockTaskFolder } from "../../runner/task-folder-lock.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, runScripted, workspace } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "a38c: scifi critique on a folder a live run holds (Docker, scripted)",
  {
    timeout: 240_000,
  },
  () => {
    it("is refused, naming the live run, and lends nothing", async () => {
      ensureImage();
      const ws = workspace("verilator-counter-debug", { iterations: 1 });
      const { result } = await runScripted(ws, "verilator-claim-only.yaml");
      expect(result.outcome.status).toBe("failed");
      const before = statSync(ws.taskDir);
      // A second run of the folder is live (this process holds its lock, as runTask does).
      const release = lockTaskFolder(ws.home, ws.taskDir, "20261204-live-run");
      let said = "";
      let code: number;
      const owners: number[] = [statSync(ws.taskDir).uid];
      const watch = setInterval(() => owners.push(statSync(ws.taskDir).uid), 20);
      try {
        code = await runCritiqueCommand(result.runId, {
          model: `scripted:${fixture("lhco-critique-one.yaml")}`,
          env: { ...process.env, SCIFI_HOME: ws.home },
          out: () => {},
          err: (t) => (said += t),
        });
      } finally {
        clearInterval(watch);
        release();
      }
      expect(code, said).toBe(2);
      expect(said).toContain("in use by run 20261204-live-run");
      // Nothing lent the folder while the live run held it (as root, a lend chowns it to the sandbox user).
      expect(new Set(owners)).toEqual(new Set([before.uid]));
    });
  },
);
