// `scifi submit`: the SAM -> sbatch mapping (exact outputs), the dry-run output of the real CLI,
// and a real submission through sbatch with its record and status lookup.

import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  findRunState,
  listSubmissions,
  placementOptions,
  placementStatus,
  renderPlacementScript,
} from "../../runner/jobs/placement.ts";
import { DEFAULT_JOBS_POLICY, jobsPolicySchema } from "../../runner/jobs/policy.ts";
import { SlurmClient } from "../../runner/jobs/slurm.ts";
import { submitTask } from "../../runner/jobs/submit.ts";
import { loadSam } from "../../runner/run/setup.ts";
import { shellQuote, visible } from "../../runner/terminal-text.ts";
import { hasEngine } from "../helpers/engines.ts";
import { hostileStrings } from "../text/hostile.ts";
import { samMetadata } from "./fixtures.ts";

const FIXTURE = resolve(import.meta.dirname, "../fixtures/slurm/placed/task.md");
const BIN = resolve(import.meta.dirname, "../../bin/scifi.js");
const homes: string[] = [];
function freshHome(): string {
  const home = mkdtempSync(join(tmpdir(), "scifi-submit-"));
  homes.push(home);
  return home;
}
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

describe("SAM limits to sbatch options", () => {
  const sam = samMetadata({ name: "fit", walltimeSec: 7200, gpu: 2, cpus: 3.5, memoryBytes: 8 * 1024 ** 3 });

  it("maps walltime (+5 min), gpu, cpus and memory (+1 GiB); the SAM wins over flags", () => {
    const flags = {
      time: "30",
      mem: "1G",
      cpusPerTask: 1,
      gres: "gpu:1",
      partition: "long",
      account: "phys",
    };
    expect(placementOptions(sam, flags, DEFAULT_JOBS_POLICY)).toEqual({
      args: [
        "--job-name=scifi-fit",
        "--nodes=1",
        "--ntasks=1",
        "--time=2:05:00",
        "--cpus-per-task=4",
        "--mem=9G",
        "--gres=gpu:2",
        "--partition=long",
        "--account=phys",
      ],
      notes: [
        "time: the SAM's value wins over the flag",
        "memory: the SAM's value wins over the flag",
        "cpus: the SAM's value wins over the flag",
        "gres: the SAM's gpu wins over the flag",
      ],
    });
  });

  it("uses the flags where the SAM is silent, then the site defaults", () => {
    const silent = samMetadata({ name: "x", walltimeSec: undefined, gpu: 0 });
    expect(
      placementOptions(silent, { time: "1-0", mem: "512M", gres: "gpu:a100:1" }, DEFAULT_JOBS_POLICY).args,
    ).toEqual([
      "--job-name=scifi-x",
      "--nodes=1",
      "--ntasks=1",
      "--time=1-00:00:00",
      "--cpus-per-task=1",
      "--mem=512M",
      "--gres=gpu:a100:1",
    ]);
    expect(placementOptions(silent, {}, DEFAULT_JOBS_POLICY).args.slice(3)).toEqual([
      "--time=1:00:00",
      "--cpus-per-task=1",
      "--mem=2G",
    ]);
  });

  it("caps SAM and flags by the site policy and says so", () => {
    const policy = jobsPolicySchema.parse({
      maxTime: "1h",
      maxGpus: 1,
      maxCpus: 2,
      maxMemory: "4G",
      partition: "debug",
    });
    expect(placementOptions(sam, {}, policy)).toEqual({
      args: [
        "--job-name=scifi-fit",
        "--nodes=1",
        "--ntasks=1",
        "--time=1:00:00",
        "--cpus-per-task=2",
        "--mem=4G",
        "--gres=gpu:1",
        "--partition=debug",
      ],
      notes: [
        "time: 2:05:00 capped to 1:00:00 by the site policy",
        "memory: 9 GiB capped to 4 GiB by the site policy",
        "cpus: 4 capped to 2 by the site policy",
        "gpus: 2 capped to 1 by the site policy",
      ],
    });
    const noGpu = samMetadata({ gpu: 0 });
    expect(() => placementOptions(noGpu, { gres: "gpu:4" }, policy)).toThrow(
      "--gres gpu:4: the site policy allows at most 1 GPU(s)",
    );
    expect(() => placementOptions(noGpu, { time: "soon" }, policy)).toThrow(
      "--time 'soon' is not valid: use minutes, M:S, H:M:S or D-H:M:S",
    );
  });

  it("renders a self-describing script that forces a backend when asked", () => {
    const text = renderPlacementScript({
      sbatchArgs: ["--time=0:10:00"],
      samFile: "/h/tasks/a b.md",
      home: "/h",
      submitDir: "/h/submits/s1",
      scifiCommand: ["/usr/bin/node", "/opt/scifi/bin/scifi.js"],
      backend: "apptainer",
    });
    expect(text).toBe(
      [
        "#!/bin/bash",
        "# Written by 'scifi submit' for /h/tasks/a b.md",
        "#SBATCH --time=0:10:00",
        '#SBATCH --chdir="/h/submits/s1"',
        '#SBATCH --output="/h/submits/s1/slurm-%j.out"',
        "set -euo pipefail",
        "export SCIFI_HOME=/h",
        "backend=apptainer",
        'echo "scifi submit: job ${SLURM_JOB_ID:-?} on $(hostname), backend $backend"',
        `exec /usr/bin/node /opt/scifi/bin/scifi.js run '/h/tasks/a b.md' --backend "$backend"`,
        "",
      ].join("\n"),
    );
  });
});

describe("the placement script's header cannot be left by the SAM's path", () => {
  it("a path with line breaks (an inbox name) stays one comment line; the command quotes it", () => {
    const script = (samFile: string) =>
      renderPlacementScript({
        sbatchArgs: ["--time=0:10:00"],
        samFile,
        home: "/h",
        submitDir: "/h/submits/s1",
        scifiCommand: ["/usr/bin/node", "/opt/scifi/bin/scifi.js"],
        backend: "apptainer",
      }).split("\n");
    const plain = script("/h/tasks/a.md");
    for (const name of hostileStrings(200)) {
      const file = `/h/tasks/a${name}touch /tmp/pwned.md`;
      const lines = script(file);
      expect(lines.length, JSON.stringify(name)).toBe(plain.length);
      expect(lines[1]).toBe(`# Written by 'scifi submit' for ${visible(file)}`);
      expect(lines.slice(2, -2), JSON.stringify(name)).toEqual(plain.slice(2, -2));
      expect(lines.at(-2)).toBe(
        `exec /usr/bin/node /opt/scifi/bin/scifi.js run ${shellQuote(file)} --backend "$backend"`,
      );
    }
  });
});

describe("scifi submit (CLI)", () => {
  it("takes a task folder, and a SAM silent on resources asks for what its sandbox will be given", () => {
    const home = freshHome();
    const folder = join(home, "task");
    mkdirSync(folder);
    writeFileSync(
      join(folder, "task.md"),
      "---\nname: silent\nwalltime: 10m\n---\n# T\n## To-do\nx\n## Expectation\n- y\n  ```check\n  true\n  ```\n",
    );
    const r = spawnSync(process.execPath, [BIN, "submit", folder, "--dry-run"], {
      env: { ...process.env, SCIFI_HOME: home },
      encoding: "utf8",
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`# Written by 'scifi submit' for ${join(folder, "task.md")}`);
    // The site's sandbox defaults (2 CPUs, 4 GiB; docs/sandbox.md), plus the job's memory margin.
    expect(r.stdout).toContain("#SBATCH --cpus-per-task=2\n");
    expect(r.stdout).toContain("#SBATCH --mem=5G\n");
  });

  it("--dry-run prints the batch script and the notes, and writes nothing", () => {
    const home = freshHome();
    const r = spawnSync(
      process.execPath,
      [BIN, "submit", FIXTURE, "--dry-run", "--time", "5", "--partition", "debug"],
      {
        env: { ...process.env, SCIFI_HOME: home },
        encoding: "utf8",
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe("note: time: the SAM's value wins over the flag\n");
    const lines = r.stdout.split("\n");
    expect(lines.slice(0, 9)).toEqual([
      "#!/bin/bash",
      `# Written by 'scifi submit' for ${FIXTURE}`,
      "#SBATCH --job-name=scifi-placed-sum",
      "#SBATCH --nodes=1",
      "#SBATCH --ntasks=1",
      "#SBATCH --time=0:25:00",
      "#SBATCH --cpus-per-task=2",
      "#SBATCH --mem=3G",
      "#SBATCH --partition=debug",
    ]);
    expect(r.stdout).toContain(
      "if docker info >/dev/null 2>&1; then backend=docker; else backend=apptainer; fi\n",
    );
    expect(r.stdout).toContain(`${BIN} run ${FIXTURE} --backend "$backend"\n`);
    expect(existsSync(join(home, "submits"))).toBe(false);
  });

  it("rejects bad flags and invalid SAMs with exit 2 and what to fix", () => {
    const home = freshHome();
    const bad = join(home, "bad.md");
    writeFileSync(bad, "---\nname: bad\nwalltim: 1h\n---\n# T\n## To-do\nx\n## Expectation\ny\n");
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [BIN, "submit", ...args], {
        env: { ...process.env, SCIFI_HOME: home },
        encoding: "utf8",
      });
    const backend = run(FIXTURE, "--backend", "podman", "--dry-run");
    expect([backend.status, backend.stderr]).toEqual([
      2,
      "scifi submit: --backend 'podman' is not one of: auto, docker, apptainer\n",
    ]);
    const time = run(FIXTURE, "--dry-run", "--time", "soon");
    // Even where the SAM's walltime wins, a flag that cannot be read is an error, not ignored.
    expect([time.status, time.stderr]).toEqual([
      2,
      "scifi submit: --time 'soon' is not valid: use minutes, M:S, H:M:S or D-H:M:S\n",
    ]);
    const invalid = run(bad, "--dry-run");
    expect(invalid.status).toBe(2);
    expect(invalid.stderr).toContain(`scifi submit: ${bad} is not a valid SAM:\n${bad}:3:1: error:`);
    expect(invalid.stderr).toContain("walltime");
  });
});

describe.skipIf(!hasEngine("slurm"))("scifi submit on a real SLURM cluster", () => {
  it("submits the batch script, records the job id and reports SLURM and run state", async () => {
    const home = freshHome();
    // The task's job runs `scifi run`; here the scifi command is `echo`, so this test covers the
    // submission path alone (the full placement runs in test/jobs/placement-run.test.ts).
    const result = await submitTask({
      home,
      sam: await loadSam(FIXTURE, home),
      flags: {},
      backend: "auto",
      dryRun: false,
      scifiCommand: ["/bin/echo", "scifi"],
    });
    expect(result.jobId).toMatch(/^\d+$/);
    const record = listSubmissions(home)[0];
    if (!record) throw new Error(`no submission record under ${home}/submits`);
    expect(record).toMatchObject({
      jobId: result.jobId,
      samFile: FIXTURE,
      name: "placed-sum",
      backend: "auto",
    });
    expect(readFileSync(join(result.submitDir, "job.sbatch"), "utf8")).toBe(result.script);

    const slurm = new SlurmClient();
    let status = await placementStatus(home, record, slurm);
    for (let i = 0; i < 120 && ["PENDING", "RUNNING", "COMPLETING"].includes(status.summary); i++) {
      await new Promise((r) => setTimeout(r, 250));
      status = await placementStatus(home, record, slurm);
    }
    expect(status).toMatchObject({ summary: "COMPLETED", slurm: { state: "COMPLETED", exitCode: "0:0" } });
    expect(status.slurm?.timeLimit).toBe("00:25:00");
    const engine = hasEngine("docker") ? "docker" : "apptainer";
    expect(readFileSync(join(result.submitDir, `slurm-${result.jobId}.out`), "utf8")).toBe(
      `scifi submit: job ${result.jobId} on ${execFileSync("hostname", { encoding: "utf8" }).trim()}, backend ${engine}\nscifi run ${FIXTURE} --backend ${engine}\n`,
    );

    // Once the run writes its state file, its outcome is the summary.
    const runDir = join(home, "runs", "20261130-000000-placed-sum-abc123");
    mkdirSync(runDir, { recursive: true });
    writeFileSync(
      join(runDir, "state.json"),
      JSON.stringify({ samFile: FIXTURE, phase: "ended", outcome: { status: "passed", reason: "verified" } }),
    );
    expect(findRunState(home, record)).toEqual({
      runId: "20261130-000000-placed-sum-abc123",
      phase: "ended",
      outcome: { status: "passed", reason: "verified" },
    });
    expect((await placementStatus(home, record, slurm)).summary).toBe("PASSED");
  });
});
