// Found by the issue-25 attacker session (was test/open/a25-job-output-link.e2e.pending.ts). Fixed:
// SLURM writes job output in the run folder (jobs/out/, no sandbox mounts it); the task folder gets
// copies written without following links.
// Attacker session for issue 25 (A25-10): a job's output file opened by SLURM through a link the
// agent planted at the predictable output path: a write outside the task folder, as the runner's
// user (SLURM, Docker, scripted agent: test/fixtures/attack25/job-output-link.yaml).
//
// Docs promise (docs/slurm.md): "Output goes to `slurm-out/<name>-<jobid>.out` and `.err` in the
// task folder"; the broker refuses `output-not-file` when "the output file was replaced by a
// symlink or a non-file"; trust.md: "the agent reached nothing the task did not grant".
//
// What happened (root runner, this machine's cluster): SEVERE. The agent makes `slurm-out/` itself
// before its first job (the broker's check only asks that it be a real folder, and the folder is
// then the sandbox user's), learns the job id of a first job from `slurm-out/a-<id>.out`, and plants
// `slurm-out/b-<id+1..id+8>.out -> ../../outside.txt`. Its second job `b` is submitted as usual;
// slurmstepd opens the output path on the node as the job's user (root here) and follows the link:
// `outside.txt`, next to the task folder, is truncated and holds the job's stdout
// (`WRITTEN-BY-THE-JOB`). The run passed; nothing was recorded. The content is the agent's, so with
// an absolute link (`/root/.ssh/authorized_keys`, `/etc/cron.d/x`) this is root outside every
// sandbox. Nothing in the delete gate compares files outside the task folder. Fix ideas: the
// output into a folder of the run folder (no sandbox mounts it) copied back, or `--output` in a
// runner-made folder the sandbox user cannot write, re-checked at job start.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "attack25");
const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!hasEngine("docker") || !hasEngine("slurm"))(
  "A25-10: a job's output through a planted link",
  () => {
    it("a file outside the task folder is not written by the agent's job", async () => {
      const root = mkdtempSync(join(tmpdir(), "scifi-a25-outlink-"));
      roots.push(root);
      const home = join(root, "home");
      const taskDir = join(root, "task");
      mkdirSync(home);
      mkdirSync(taskDir);
      writeFileSync(join(root, "outside.txt"), "precious, outside the task folder\n");
      writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "job-output-link.md"), "utf8"));
      let out = "";
      const child = spawn(
        process.execPath,
        [
          CLI,
          "run",
          join(taskDir, "task.md"),
          "--model",
          `scripted:${join(FIXTURES, "job-output-link.yaml")}`,
        ],
        { cwd: root, env: { ...process.env, SCIFI_HOME: home }, stdio: ["ignore", "pipe", "pipe"] },
      );
      child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
      await new Promise<number | null>((r) => child.once("exit", (c) => r(c)));
      expect(readFileSync(join(root, "outside.txt"), "utf8"), out).toBe(
        "precious, outside the task folder\n",
      );
    }, 300_000);
  },
);
