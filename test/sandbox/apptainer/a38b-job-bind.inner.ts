// a38b (issue 38): a SLURM job's container on a task folder whose path Apptainer's bind list would
// split, INSIDE the harness as the non-root user (uid 1000, as on a cluster), with the real
// `apptainer`. The attack: a copy of the folder named `fit,data` beside `fit`, and in it the agent's
// link `data` to a folder outside; the job script's `--bind '<dir>:/task'` became `fit` and
// `data:/task`, and the job read and wrote the outside folder at /task. Now the script is refused,
// naming the folder; the same script for an ordinary folder runs for real and its job sees only the
// task folder at /task. Unit twin: test/jobs/a38b-job-bind-comma.test.ts.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type AgentJobScript, renderAgentJobScript } from "../../../runner/jobs/batch-script.ts";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { PathRefused } from "../../../runner/sandbox/types.ts";
import { testImage } from "./fixtures.ts";

let jobs = 0;

/** The job of `taskDir` as the broker renders it, its frozen script reading /task and the outside. */
function job(root: string, taskDir: string, outside: string): AgentJobScript {
  // A name of its own per job: two made in one millisecond met at one read-only file (EACCES).
  const scriptCopy = join(root, "records", `job-${++jobs}.sh`);
  mkdirSync(join(root, "records"), { recursive: true });
  writeFileSync(
    scriptCopy,
    [
      "cat /task/key 2>/dev/null && echo READ-OUTSIDE",
      `test -e ${outside} && echo SEES-OUTSIDE-PATH`,
      "cat /task/marker",
      "echo job > /task/from-job.txt",
      "",
    ].join("\n"),
    { mode: 0o555 },
  );
  const sifDir = process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif";
  return {
    resources: { jobName: "scifi-a38b", timeSec: 60, cpus: 1, memoryBytes: 1024 ** 3, gpus: 0 },
    runId: "run-a38b",
    taskDir,
    stdoutPath: join(taskDir, "j.out"),
    stderrPath: join(taskDir, "j.err"),
    scriptCopy,
    scriptName: "job.sh",
    args: [],
    sandbox: {
      engine: "apptainer",
      image: testImage(),
      sif: join(sifDir, sifFileName(testImage())),
      network: false,
    },
  };
}

describe("a38b: a job container's bind on Apptainer (inside the harness)", { timeout: 180_000 }, () => {
  it("a task folder named with a comma is refused; an ordinary one is bound alone at /task", () => {
    expect(process.getuid?.()).not.toBe(0);
    const root = mkdtempSync(join(tmpdir(), "scifi-a38b-job-bind-"));
    const outside = join(root, "outside");
    const fit = join(root, "fit");
    const copy = join(root, "fit,data");
    for (const dir of [outside, fit, copy]) mkdirSync(dir);
    writeFileSync(join(outside, "key"), "the user's secret\n");
    for (const dir of [fit, copy]) writeFileSync(join(dir, "marker"), `marker of ${dir}\n`);
    symlinkSync(outside, join(copy, "data"));

    // The attack's folder: no script is written for it, and the error names the folder.
    expect(() => renderAgentJobScript(job(root, copy, outside))).toThrow(PathRefused);
    expect(() => renderAgentJobScript(job(root, copy, outside))).toThrow(copy);

    // The control: the same script for `fit`, run by bash as SLURM would (in the task folder).
    const script = join(root, "batch.sh");
    writeFileSync(script, renderAgentJobScript(job(root, fit, outside)));
    const r = spawnSync("bash", [script], { cwd: fit, encoding: "utf8", timeout: 150_000 });
    const shown = `exit ${r.status}\n${r.stdout}\n${r.stderr}`;
    expect(r.status, shown).toBe(0);
    expect(r.stdout, shown).toContain(`marker of ${fit}`);
    expect(r.stdout, shown).not.toContain("READ-OUTSIDE");
    expect(r.stdout, shown).not.toContain("SEES-OUTSIDE-PATH");
    expect(readFileSync(join(fit, "from-job.txt"), "utf8")).toBe("job\n");
    expect(existsSync(join(outside, "from-job.txt"))).toBe(false);
    expect(existsSync(join(copy, "from-job.txt"))).toBe(false);
  });
});
