// `scifi plan`: a real SAM file through the real parser, policy and CLI; output and exit codes.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../../runner/cli/main.ts";
import { planTask } from "../../runner/cli/plan-task.ts";
import { hostGpuCount } from "../../runner/policy/host-gpus.ts";
import { runScifi } from "../helpers/cli.ts";

function sink() {
  let text = "";
  return { write: (t: string) => (text += t), text: () => text };
}

function taskFolder(frontMatter: string): { home: string; dir: string } {
  const home = realpathSync(mkdtempSync(join(tmpdir(), "scifi-plan-")));
  const dir = join(home, "tasks", "fit");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "task.md"),
    `---\n${frontMatter}---\n# Fit\n## To-do\nFit it.\n## Expectation\nFitted.\n`,
  );
  return { home, dir };
}

describe("scifi plan", () => {
  it("prints every grant in human form", () => {
    const { home, dir } = taskFolder("name: fit\nnetwork: true\nscratch: 1G\n");
    const out = sink();
    const err = sink();
    expect(planTask(dir, { json: false, env: { SCIFI_HOME: home }, out, err })).toBe("ok");
    expect(err.text()).toBe("");
    const text = out.text();
    expect(text).toContain(`Plan for ${dir}/task.md`);
    expect(text).toContain(`  site policy  built-in defaults (no ${home}/site-policy.yaml)`);
    expect(text).toContain("  network      ON (granted by the SAM)");
    expect(text).toContain("  scratch      1 GiB at /scratch");
    expect(text).toContain("  task folder  may grow by at most 4 GiB (maxTaskFolder)");
    expect(text).not.toMatch(/run as +uid 0,/); // never root in a sandbox
    expect(text).toContain(`    rw  /task          <- ${dir}  (task folder)`);
    expect(text).toContain(`    ro  /task/task.md  <- ${dir}/task.md  (sam file)`);
  });

  it("says a host can be approved at run time (approval: network) and that jobs get no host list", () => {
    const { home, dir } = taskFolder(
      "name: fit\nnetwork: [data.example.org]\napproval: [network]\njobs: slurm\n",
    );
    const out = sink();
    expect(planTask(dir, { json: false, env: { SCIFI_HOME: home }, out, err: sink() })).toBe("ok");
    expect(out.text()).toContain(
      "               (approval: network) a host not on the list that the site's allowedHosts cover can be asked for at run time: the refusal files an approval request (at most 5 pending), and once approved (scifi approve) the host is reachable from the work sandboxes for the rest of the run\n",
    );
    expect(out.text()).toContain(
      "  jobs         SLURM (submit_job); network: a job has no network: the task's host list (data.example.org) is reachable only from the work sandbox, through the run's proxy. Fetch the data there, into the task folder, and let the job read it from /task\n",
    );
    const json = sink();
    expect(planTask(dir, { json: true, env: { SCIFI_HOME: home }, out: json, err: sink() })).toBe("ok");
    expect(JSON.parse(json.text())).toMatchObject({
      hostApproval: expect.stringContaining("can be asked for at run time"),
      jobsNetwork: expect.stringContaining("a job has no network: the task's host list"),
    });
    // Without `network` in approval, or without a host list, nothing is said about it.
    const plain = taskFolder("name: fit\nnetwork: [data.example.org]\n");
    const o2 = sink();
    expect(planTask(plain.dir, { json: false, env: { SCIFI_HOME: plain.home }, out: o2, err: sink() })).toBe(
      "ok",
    );
    expect(o2.text()).not.toContain("approval: network");
    expect(o2.text()).not.toContain("  jobs ");
  });

  it("shows the run's limits and the command allowlist, in the report's units, also in --json", () => {
    const { home, dir } = taskFolder(
      "name: fit\nwalltime: 20m\niterations: 4\nbudget_usd: 2.5\nallow_commands: [python3, gfortran]\n",
    );
    const out = sink();
    expect(planTask(dir, { json: false, env: { SCIFI_HOME: home }, out, err: sink() })).toBe("ok");
    expect(out.text()).toContain("  wall time    1200 s (20m)\n");
    expect(out.text()).toContain("  iterations   at most 4\n");
    expect(out.text()).toContain("  budget       USD 2.50\n");
    expect(out.text()).toContain("  commands     only python3, gfortran (allow_commands)\n");
    const json = sink();
    expect(planTask(dir, { json: true, env: { SCIFI_HOME: home }, out: json, err: sink() })).toBe("ok");
    expect(JSON.parse(json.text())).toMatchObject({
      spec: { walltimeSec: 1200 },
      limits: { iterations: 4, budgetUsd: 2.5, walltimeSec: 1200, allowCommands: ["python3", "gfortran"] },
    });
  });

  it("prints the spec as JSON, reading the site policy from the env", () => {
    const { home, dir } = taskFolder("name: fit\n");
    writeFileSync(join(home, "policy.yaml"), "defaultCpus: 1\ndefaultImage: scifi-base:bookworm\n");
    const out = sink();
    const env = { SCIFI_HOME: home, SCIFI_SITE_POLICY: join(home, "policy.yaml") };
    expect(planTask(join(dir, "task.md"), { json: true, env, out, err: sink() })).toBe("ok");
    const parsed = JSON.parse(out.text()) as { sitePolicy: string; spec: Record<string, unknown> };
    expect(parsed.sitePolicy).toBe(join(home, "policy.yaml"));
    expect(parsed.spec).toMatchObject({
      image: "scifi-base:bookworm",
      cpus: 1,
      network: false,
      gpus: 0,
      taskDir: dir,
    });
  });

  it("exits 2 with the rule when the policy refuses (like scifi run), 2 on a bad SAM or site policy file", async () => {
    const { home, dir } = taskFolder("name: fit\ngpu: 1\n");
    const saved = process.env.SCIFI_HOME;
    process.env.SCIFI_HOME = home;
    try {
      process.exitCode = undefined;
      expect(await main(["plan", dir])).toBe(2);
      process.exitCode = undefined;
      writeFileSync(join(home, "bad.yaml"), "maxGpus: many\n");
      expect(await main(["plan", dir, "--site-policy", join(home, "bad.yaml")])).toBe(2);
      process.exitCode = undefined;
      expect(await main(["plan", join(home, "nope")])).toBe(2);
      process.exitCode = undefined;
      writeFileSync(join(home, "ok.yaml"), "maxGpus: 1\n");
      // Allowed by the site, then checked against this machine's GPUs.
      expect(await main(["plan", dir, "--site-policy", join(home, "ok.yaml"), "--json"])).toBe(
        hostGpuCount() >= 1 ? 0 : 2,
      );
    } finally {
      process.exitCode = undefined;
      if (saved === undefined) delete process.env.SCIFI_HOME;
      else process.env.SCIFI_HOME = saved;
    }
  });

  it("the real CLI: plan and run exit 2 alike on a policy refusal, with the rule", async () => {
    const { home, dir } = taskFolder("name: fit\ngpu: 1\n");
    const plan = await runScifi(home, ["plan", dir], 60_000);
    const run = await runScifi(home, ["run", dir, "--model", "scripted:/nonexistent.yaml"], 60_000);
    expect(plan.code).toBe(2);
    expect(run.code).toBe(2);
    expect(plan.stderr + plan.stdout).toMatch(/gpu/i);
  });

  it.skipIf(hostGpuCount() > 0)(
    "the real CLI: a GPU the site allows but this host lacks is refused at plan and run, clearly",
    async () => {
      const { home, dir } = taskFolder("name: fit\ngpu: 1\n");
      writeFileSync(join(home, "site-policy.yaml"), "maxGpus: 1\n");
      const plan = await runScifi(home, ["plan", dir], 60_000);
      const run = await runScifi(home, ["run", dir, "--model", "scripted:/nonexistent.yaml"], 60_000);
      for (const r of [plan, run]) {
        expect(r.code).toBe(2);
        expect(r.stderr).toContain(
          "policy refused [gpu-not-on-host] gpu: the SAM asks for 1 GPU(s) and this machine has none (no NVIDIA device in /dev)",
        );
      }
    },
  );
});
