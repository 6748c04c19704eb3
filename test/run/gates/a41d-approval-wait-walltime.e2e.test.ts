// Attacker a41d (issue 42 item 3, "one clock", and issue 41's long nights; fixed): a task whose SAM asks a
// person to approve its start (`approval: [run]`) is approved after a wait longer than its wall time
// (in real life: `walltime: 1h`, approved in the morning). Real Docker, `scifi run` and
// `scifi approve`, a scripted model (labelled scripted).
//
// Doc promise: docs/approval.md: `run` waits "the task before its first iteration (nothing has
// run ...)", "on approval: the run starts"; "finish, run and network are asked where no sandbox is
// open: nothing runs and nothing costs while they wait"; the wait's own bound is approval_timeout
// (default 24 h), not the wall time.
// What happened (measured): the SAM says `walltime: 12s`; the run waits for the approval (the
// deadline does not end the wait: it waited 40 s when nobody answered), and the moment it is
// approved, 15 s in, the run ends failed at its first phase: history `limit` "wall time limit
// reached (12 s)". The clock counted the wait the deadline timer ignored: two consumers of one clock
// disagree, and every `approval: [run]` answered after the wall time fails the run at once.
// Fixed: the clock is held while the run waits for its start approval (RunClock.hold, gates.ts
// mayStart): the deadline, the time left and the elapsed time move past the wait; docs/approval.md.
import { spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI, cli } from "../../attack/a41-run.ts";
import { script, workspace } from "../../attack/a41d-run.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { waitFor } from "../harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "a41d: a start approved after the wall time (docker)",
  { timeout: 120_000 },
  () => {
    it("the run starts on approval; the wait is not charged to its wall time", async () => {
      const ws = workspace();
      const sam = join(ws.taskDir, "task.md");
      writeFileSync(
        sam,
        readFileSync(sam, "utf8")
          .replace(/^walltime: .*$/m, "walltime: 12s")
          .replace(/^difficulty: easy$/m, "difficulty: easy\napproval: [run]"),
      );
      const child = spawn(
        process.execPath,
        [CLI, "run", ws.taskDir, "--model", `scripted:${script({ workSec: 2 })}`, "--backend", "docker"],
        { env: { ...process.env, SCIFI_HOME: ws.home }, stdio: ["ignore", "ignore", "pipe"] },
      );
      let err = "";
      child.stderr?.on("data", (d: Buffer) => {
        err += d.toString();
      });
      let ended = false;
      const exit = new Promise<number | null>((r) =>
        child.once("exit", (c) => {
          ended = true;
          r(c);
        }),
      );
      const request = await waitFor(() => /awaiting approval (\S+) \(run\)/.exec(err)?.[1], 60_000);
      await new Promise((r) => setTimeout(r, 15_000)); // longer than the 12 s wall time
      const [runId = ""] = readdirSync(join(ws.home, "runs"));
      const approved = await cli(ws.home, ["approve", runId, request]);
      expect(approved.code, approved.stderr).toBe(0);
      await waitFor(() => (ended || /phase work/.test(err) ? true : undefined), 60_000);
      child.kill("SIGTERM");
      await exit;
      const history = readFileSync(join(ws.home, "runs", runId, "history.jsonl"), "utf8");
      expect(history, "the run ended on its wall time right after the approval").not.toMatch(
        /"type":"limit"[^}]*"limit":"walltime"/,
      );
      expect(err).toMatch(/phase work/);
    });
  },
);
