// Attacker a41d (issue 41, `scifi ctl` on a run it was not meant for): a pause of one of
// `scifi check-task`'s audit runs. Real Docker, the real `scifi check-task` (its lazy agents are the
// scripted model, labelled scripted).
//
// Doc promise: docs/check-task.md: the `untouched` audit "must fail": "the checks judge the
// untouched folder"; "sound: the checks fail for every lazy agent and on the untouched folder".
// docs/ctl.md: a pause stops the run "at its next phase boundary ... no outcome". The audit runs are
// ordinary runs under <home>/check-task/home/runs/, so `SCIFI_HOME=<home>/check-task/home scifi
// ctl <run> pause` (or the decision file itself, the documented interface, written here) reaches them.
// What happened: the `untouched` audit's run paused after phase `created`, before any check ran;
// runTask returns the paused run with the stand-in outcome `failed` ("the run stopped without an
// outcome"), audit.ts reads only outcome.status, and check-task prints `untouched ok must fail,
// failed` and "sound", exit 0 (and caches that verdict for this content): checks that were never
// run are certified as failing on the untouched folder.
// Suggested fix: check-task (like eval's trial.ts) treats `result.paused` as "the audit did not
// happen" (not ok, status error, nothing cached); better, a run started with no one to resume it
// (check-task, eval trials) refuses pause decisions on its history, and ctl refuses them up front.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeDecision } from "../../runner/run/session/control.ts";
import { CLI } from "../attack/a41-run.ts";
import { workspace } from "../attack/a41d-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { waitFor } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "a41d: a paused check-task audit (docker)",
  { timeout: 240_000 },
  () => {
    it("is not counted as the checks failing on the untouched folder", async () => {
      const ws = workspace();
      const child = spawn(process.execPath, [CLI, "check-task", ws.taskDir, "--backend", "docker"], {
        env: { ...process.env, SCIFI_HOME: ws.home, SCIFI_CTL_POLL_MS: "100" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      child.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr?.on("data", (d: Buffer) => {
        out += d.toString();
      });
      const ended = new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
      // The first audit is `untouched`: pause its run as soon as its folder is there.
      const runs = join(ws.home, "check-task", "home", "runs");
      const run = await waitFor(
        () => {
          const first = existsSync(runs) ? readdirSync(runs)[0] : undefined;
          return first && existsSync(join(runs, first, "state.json")) ? join(runs, first) : undefined;
        },
        120_000,
        10,
      );
      mkdirSync(join(run, "control"), { recursive: true });
      writeDecision(join(run, "control"), {
        action: "pause",
        at: new Date().toISOString(),
        by: "a41d@login",
      });
      const code = await ended;
      const untouched = out.split("\n").find((l) => /^\s+untouched\s/.test(l)) ?? "";
      // The pause must have been taken before the checks (else this test shows nothing).
      expect(out).not.toMatch(/untouched\s+\S+\s+must fail, failed \(failed:/);
      expect(untouched, out).not.toMatch(/\bok\b/);
      expect(out).not.toMatch(/^sound:/m);
      expect(code, out).not.toBe(0);
    });
  },
);
