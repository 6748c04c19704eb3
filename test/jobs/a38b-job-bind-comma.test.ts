// Attack on issue 38's "scripts and command lines the runner writes for other programs": the
// SLURM job script's Apptainer bind list (runner/jobs/batch-script.ts renderAgentJobScript), found
// by attacker a38b. Fixed: runner/sandbox/bind-spec.ts (every bind value from a path is checked).
// Doc promise: issue 38 point 2 (scripts the runner writes for other programs: no text it did not
// choose may change what they do); docs/sandbox.md: a job runs "in a container with the task's
// image, the task folder at /task"; trust.md rule 9 (paths parsed strictly into one form before
// any rule sees them). The work sandbox already refuses such paths (runner/sandbox/apptainer/
// args.ts checkBindable: "Apptainer cannot bind a path containing ':' or ','").
// What happened: the job script passes `--bind '<taskDir>:/task'`, shell-quoted, but Apptainer
// splits a bind list on commas. For a task folder named `fit,data` beside a folder `fit` (a copy of
// the folder, "run a copy of the folder to run it twice at once"), the job gets `fit` bound at its
// own path and `data:/task`, a relative source Apptainer resolves from the job's working folder,
// the task folder, where `data` is whatever the agent made it: a link to the user's home. Shown in
// the Apptainer harness (uid 1000, as on a cluster) with the script's own command line: the job
// read `/task/key` of a folder outside the task folder and wrote a file into it.
// Suggested fix: refuse (at submit, with the path) a task folder or script copy whose path holds
// ',' or ':' on the Apptainer side, as checkBindable does for the work sandbox; or bind with
// `--mount type=bind,src="...",dst=/task` quoted as Apptainer's --mount CSV reads it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type JobSandbox, renderAgentJobScript } from "../../runner/jobs/batch-script.ts";
import { bindArgs } from "../../runner/sandbox/apptainer/args.ts";
import { bindablePath, mountSpec } from "../../runner/sandbox/bind-spec.ts";
import { PathRefused } from "../../runner/sandbox/types.ts";
import { visible } from "../../runner/terminal-text.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");

/** The words the script gives `apptainer`, run by bash with apptainer and id shimmed. */
function apptainerArgv(script: string): string[] {
  const dir = mkdtempSync(join(tmpdir(), "scifi-a38b-bind-"));
  const file = join(dir, "job.sh");
  const shim = [
    `apptainer() { printf '%s\\0' "$@" > ${dir}/argv; }`,
    "id() { echo 1000; }",
    "cd() { :; }",
  ].join("\n");
  writeFileSync(file, `${shim}\n${script}`);
  spawnSync("bash", ["--norc", file], { encoding: "utf8", env: { PATH: process.env.PATH ?? "" }, cwd: dir });
  return readFileSync(join(dir, "argv"), "utf8").split("\0").slice(0, -1);
}

describe("a38b: an agent job's bind list on Apptainer", () => {
  const taskDir = "/data/fit,data";
  const scriptCopy = "/home/u/.scifi/runs/run-1/jobs/job.sh";

  it("binds the task folder at /task and nothing else, or refuses the path", () => {
    let script: string;
    try {
      script = renderAgentJobScript({
        resources: { jobName: "j", timeSec: 60, cpus: 1, memoryBytes: 1024 ** 3, gpus: 0 },
        runId: "run-1",
        taskDir,
        stdoutPath: `${taskDir}/.scifi-jobs/j-%j.out`,
        stderrPath: `${taskDir}/.scifi-jobs/j-%j.err`,
        scriptCopy,
        scriptName: "job.sh",
        args: [],
        sandbox: { engine: "apptainer", image: "scifi-base:bookworm", sif: "/sif/task.sif", network: false },
      });
    } catch (error) {
      // Refused, naming the path: what the work sandbox does.
      expect(String(error)).toContain(taskDir);
      return;
    }
    const argv = apptainerArgv(script);
    const binds = argv.flatMap((word, i) => (argv[i - 1] === "--bind" ? word.split(",") : []));
    // As Apptainer reads them: each `src[:dst[:opts]]`.
    const pairs = binds.map((b) => b.split(":").slice(0, 2).join(":"));
    expect(pairs, `apptainer ${argv.join(" ")}`).toEqual([
      `${taskDir}:/task`,
      `${scriptCopy}:/scifi-job/script.sh`,
    ]);
  });

  const render = (dir: string, sandbox: JobSandbox) =>
    renderAgentJobScript({
      resources: { jobName: "j", timeSec: 60, cpus: 1, memoryBytes: 1024 ** 3, gpus: 0 },
      runId: "run-1",
      taskDir: dir,
      stdoutPath: `${dir}/.scifi-jobs/j-%j.out`,
      stderrPath: `${dir}/.scifi-jobs/j-%j.err`,
      scriptCopy,
      scriptName: "job.sh",
      args: [],
      sandbox,
    });
  const apptainer: JobSandbox = { engine: "apptainer", image: "i", sif: "/sif/task.sif", network: false };
  const docker: JobSandbox = { engine: "docker", image: "i", sif: "/sif/task.sif", network: false };
  const auto: JobSandbox = { engine: "auto", image: "i", sif: "/sif/task.sif", network: false };

  for (const dir of [
    "/data/fit,data",
    "/data/fit:/etc",
    '/data/fit"x',
    "/data/fit\\,x",
    "/data/fit\nx",
    "data/fit",
  ])
    it(`refuses the task folder ${JSON.stringify(dir)} for every engine, naming it`, () => {
      for (const box of [apptainer, docker, auto]) {
        expect(() => render(dir, box)).toThrow(PathRefused);
        // Named as shown: a control character as its escape (`\n`), never a line of its own.
        expect(() => render(dir, box)).toThrow(visible(dir));
      }
    });

  it("refuses a frozen script copy whose path would split (a home with a comma)", () => {
    expect(() =>
      renderAgentJobScript({
        resources: { jobName: "j", timeSec: 60, cpus: 1, memoryBytes: 1024 ** 3, gpus: 0 },
        runId: "run-1",
        taskDir: "/data/fit",
        stdoutPath: "/data/fit/o",
        stderrPath: "/data/fit/e",
        scriptCopy: "/home/a,b/.scifi/runs/run-1/jobs/scripts/job.sh",
        scriptName: "job.sh",
        args: [],
        sandbox: docker,
      }),
    ).toThrow(/home\/a,b/);
  });

  it("keeps an ordinary folder (spaces, quotes, '=') as one bind, shell-quoted", () => {
    const dir = "/data/my fit's year=2020";
    const argv = apptainerArgv(render(dir, apptainer));
    expect(argv.flatMap((w, i) => (argv[i - 1] === "--bind" ? [w] : []))).toEqual([
      `${dir}:/task`,
      `${scriptCopy}:/scifi-job/script.sh:ro`,
    ]);
    // No container engine: nothing is bound, so the path is only shell-quoted.
    expect(render("/data/fit,data", { engine: "none" })).toContain("cd /data/fit,data || exit 97");
  });

  it("the work sandbox's binds and the scratch --mount go through the same check", () => {
    const mount = { source: "/data/a,b", target: "/data", readOnly: true, reason: "mount /data" };
    expect(() => bindArgs([mount])).toThrow(PathRefused);
    expect(() => bindablePath("/x\u0085y", "c1")).toThrow(PathRefused);
    expect(() => mountSpec("/state/a=b/scratch.img", "/scratch", "image-src=/", "scratch")).toThrow(/'='/);
    expect(mountSpec("/state/s.img", "/scratch", "image-src=/", "scratch")).toBe(
      "type=bind,src=/state/s.img,dst=/scratch,image-src=/",
    );
  });
});

describe("a38b: scifi run of a jobs task whose folder no job container can bind", () => {
  it("is refused at start (exit 2), naming the folder, before any run folder is written", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-a38b-bind-run-"));
    const home = join(root, "home");
    const task = join(root, "fit,data");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(join(home, "site-policy.yaml"), "jobs:\n  sandbox: apptainer\n");
    writeFileSync(
      join(task, "task.md"),
      "---\nname: comma\njobs: slurm\n---\n# Comma\n## To-do\nx\n## Expectation\n- y\n",
    );
    const r = spawnSync(
      process.execPath,
      [CLI, "run", join(task, "task.md"), "--model", "scripted:/dev/null"],
      {
        cwd: root,
        env: { ...process.env, SCIFI_HOME: home },
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    expect(r.status, `${r.stdout}${r.stderr}`).toBe(2);
    expect(r.stderr).toContain(`refused path '${task}'`);
    expect(existsSync(join(home, "runs"))).toBe(false);
  }, 90_000);
});
