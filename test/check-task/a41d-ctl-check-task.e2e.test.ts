// Attacker a41d (issue 41, `scifi ctl` on a run it was not meant for), fixed: a pause of one of
// `scifi check-task`'s audit runs. Real Docker, the real `scifi check-task` (its lazy agents are the
// scripted model, labelled scripted).
//
// Doc promise: docs/check-task.md: the `untouched` audit "must fail": "the checks judge the
// untouched folder"; "sound: the checks fail for every lazy agent and on the untouched folder".
// What happened: the audit runs are ordinary runs under <home>/check-task/home/runs/, so a pause
// decision (ctl, or the decision file itself) reached them: the `untouched` run paused after phase
// `created`, before any check ran; audit.ts read only the stand-in outcome `failed`, and check-task
// printed `untouched ok must fail, failed` and "sound", exit 0, and cached it.
// Fixed: an audit's run records who started it (state.json `startedBy`): `scifi ctl <run> pause`
// refuses it up front (exit 2, saying why), the run refuses a decision file planted in control/ on
// its history, and the audit judges the checks that really ran. Should a run pause anyway, check-task
// counts it as "the audit did not happen" (runner/check-task/audit.ts auditRunOf; a unit test in
// test/check-task/audit-paused.test.ts).
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { AuditReport } from "../../runner/check-task/audit.ts";
import { writeDecision } from "../../runner/run/session/control.ts";
import { CLI } from "../attack/a41-run.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, waitFor } from "../run/harness.ts";
import { taskRoot } from "./tasks.ts";

describe.skipIf(!hasEngine("docker"))(
  "a41d: a pause of a check-task audit run (docker)",
  { timeout: 240_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("is refused by the run, on its history: the audit judges checks that ran", async () => {
      const ws = taskRoot(["sound"]);
      const child = spawn(process.execPath, [CLI, "check-task", join(ws.root, "sound"), "--json"], {
        env: { ...process.env, SCIFI_HOME: ws.home, SCIFI_CTL_POLL_MS: "100" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let out = "";
      let err = "";
      child.stdout?.on("data", (d: Buffer) => {
        out += d.toString();
      });
      child.stderr?.on("data", (d: Buffer) => {
        err += d.toString();
      });
      const ended = new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
      // The first audit is `untouched`: its run, as soon as its folder is there.
      const auditHome = join(ws.home, "check-task", "home");
      const runs = join(auditHome, "runs");
      const runId = await waitFor(
        () => {
          const first = existsSync(runs) ? readdirSync(runs)[0] : undefined;
          return first && existsSync(join(runs, first, "state.json")) ? first : undefined;
        },
        120_000,
        10,
      );
      const run = join(runs, runId);
      // A decision file, as ctl would write one (ctl itself refuses: test/run/session/a41d-ctl-started-by.test.ts).
      mkdirSync(join(run, "control"), { recursive: true });
      writeDecision(join(run, "control"), {
        action: "pause",
        at: new Date().toISOString(),
        by: "a41d@login",
      });
      const code = await ended;
      const history = readFileSync(join(run, "history.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { type: string; action?: string; refused?: string });
      expect(history.filter((e) => e.type === "control")).toEqual([
        expect.objectContaining({ action: "pause", refused: expect.stringContaining("takes no pause") }),
      ]);
      expect(history.some((e) => e.type === "control" && e.action === "paused")).toBe(false);
      const report = JSON.parse(out) as AuditReport;
      const untouched = report.audits.find((a) => a.audit === "untouched");
      // The verdict stands on checks that ran on the untouched folder.
      expect(untouched?.runId).toBe(runId);
      expect(untouched?.status, err).toBe("failed");
      expect(untouched?.checks.length, err).toBeGreaterThan(0);
      expect(report.sound, err).toBe(true);
      expect(code, err).toBe(0);
    });
  },
);
