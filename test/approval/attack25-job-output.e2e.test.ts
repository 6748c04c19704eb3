// Attacker session for issue 25, a probe that HELD: a job's output opened by slurmstepd through a
// link the agent planted at the predictable output path, pointing at a start file under
// `approval: [delete]` (SLURM, Docker, scripted agent: test/fixtures/attack25/job-output-start-file.yaml).
// Before the fix of A25-10 slurmstepd followed the link (the start file was truncated, then put back
// and asked). Now SLURM writes in the run folder and the copy into slurm-out/ follows no link: the
// start file is never touched, so there is nothing to ask (a request would be denied here).
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "attack25");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasEngine("docker") || !hasEngine("slurm"))(
  "attack25: job output through a planted link to a start file",
  () => {
    it("the start file is never written through the link: nothing to ask, its start content at the end", async () => {
      const root = mkdtempSync(join(tmpdir(), "scifi-attack25-outstart-"));
      roots.push(root);
      const home = join(root, "home");
      const taskDir = join(root, "task");
      mkdirSync(home);
      mkdirSync(join(taskDir, "data"), { recursive: true });
      writeFileSync(join(taskDir, "data", "raw.csv"), "energy\n1.0\n2.0\n");
      writeFileSync(
        join(taskDir, "task.md"),
        readFileSync(join(FIXTURES, "job-output-start-file.md"), "utf8"),
      );
      let out = "";
      const child = spawn(
        process.execPath,
        [
          CLI,
          "run",
          join(taskDir, "task.md"),
          "--model",
          `scripted:${join(FIXTURES, "job-output-start-file.yaml")}`,
        ],
        {
          cwd: root,
          env: { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
      while (child.exitCode === null) {
        for (const v of pendingApprovals(home))
          execFileSync(process.execPath, [CLI, "deny", v.runId, v.request.id, "--reason", "keep it"], {
            env: { ...process.env, SCIFI_HOME: home },
          });
        await new Promise((r) => setTimeout(r, 250));
      }
      const runs = readdirSync(join(home, "runs")).filter((d) => !d.endsWith(".html"));
      const requests = runs.flatMap((id) => runApprovals(home, id).map((v) => v.request.summary));
      expect(requests, out).toEqual([]);
      expect(readFileSync(join(taskDir, "data", "raw.csv"), "utf8")).toBe("energy\n1.0\n2.0\n");
    }, 300_000);
  },
);
