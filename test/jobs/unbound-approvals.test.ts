// issue 25: a site that runs agent jobs without a container (jobs.sandbox: none) cannot bind a job
// to the submit_job or delete approval (a job can call the node's own sbatch), so the real CLI
// refuses such a task at start with the rule and the fix (the function itself: a container sandbox,
// or only the network approval, which binds jobs already, passes).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { refuseUnboundApprovals } from "../../runner/jobs/run-jobs.ts";
import { PolicyRefused } from "../../runner/policy/refused.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const roots: string[] = [];

const requiring = (...actions: string[]) => ({ requires: (a: string) => actions.includes(a) });

describe("jobs without a container and the approvals a job could go around", () => {
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  it("refuses submit_job and delete approval with jobs.sandbox: none; network and container sandboxes pass", () => {
    expect(() => refuseUnboundApprovals({ engine: "none" }, requiring("submit_job"))).toThrow(PolicyRefused);
    expect(() => refuseUnboundApprovals({ engine: "none" }, requiring("delete", "finish"))).toThrow(
      /\[jobs-approval-unbound\] jobs\.sandbox: this task requires approval of delete, .*node's own sbatch/,
    );
    // network binds already (a submission under a pending or denied request is refused).
    expect(() => refuseUnboundApprovals({ engine: "none" }, requiring("network", "finish"))).not.toThrow();
    expect(() => refuseUnboundApprovals({ engine: "none" }, undefined)).not.toThrow();
    const box = { engine: "docker" as const, image: "scifi-base:bookworm", sif: "/x.sif", network: false };
    expect(() => refuseUnboundApprovals(box, requiring("submit_job", "delete"))).not.toThrow();
  });

  it("scifi run refuses such a task at start (exit 2), naming the rule and the fix", () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-unbound-"));
    roots.push(root);
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(join(home, "site-policy.yaml"), "jobs:\n  sandbox: none\n");
    writeFileSync(
      join(task, "task.md"),
      "---\nname: unbound\njobs: slurm\napproval: [submit_job]\n---\n# Unbound\n## To-do\nx\n## Expectation\n- y\n",
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
    expect(r.stderr).toContain("policy refused [jobs-approval-unbound] jobs.sandbox");
    expect(r.stderr).toContain("Set jobs.sandbox to auto, docker or apptainer");
  }, 90_000);
});
