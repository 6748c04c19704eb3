// `scifi run` input errors exit 2 with a message saying what failed and what to do (no engine needed:
// these are refused before any sandbox starts).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO } from "./harness.ts";

const exec = promisify(execFile);

async function scifi(args: string[], home: string): Promise<{ code: number; stderr: string }> {
  return exec(process.execPath, [join(REPO, "bin/scifi.js"), ...args], {
    env: { ...process.env, SCIFI_HOME: home },
    timeout: 60_000,
  }).then(
    (r) => ({ code: 0, stderr: r.stderr }),
    (e: { code: number; stderr: string }) => ({ code: e.code, stderr: e.stderr }),
  );
}

describe("scifi run: invalid input exits 2", () => {
  const root = mkdtempSync(join(tmpdir(), "scifi-run-cli-"));
  const home = join(root, "home");
  mkdirSync(home);
  const script = join(root, "script.yaml");
  writeFileSync(script, "work: []\n");

  it("an invalid SAM prints its diagnostics", async () => {
    const bad = join(root, "bad.md");
    writeFileSync(bad, "---\nname: bad\nwalltme: 1h\n---\n# Bad\n\n## To-do\nx\n");
    const r = await scifi(["run", bad, "--model", `scripted:${script}`], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/bad\.md:\d+:\d+: error: /);
    expect(r.stderr).toContain("is not a valid SAM (run 'scifi validate");
  });

  it("a mistyped scripted model path is refused before any run folder is made", async () => {
    const task = join(root, "ok");
    mkdirSync(task);
    writeFileSync(join(task, "task.md"), "# Ok\n\n## To-do\nx\n\n## Expectation\n- y\n");
    const fresh = join(root, "fresh-home");
    mkdirSync(fresh);
    const r = await scifi(["run", task, "--model", "scripted:/nonexistent.yaml"], fresh);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("cannot read script /nonexistent.yaml");
    expect(existsSync(join(fresh, "runs"))).toBe(false);
  });

  it("a missing task", async () => {
    const r = await scifi(["run", join(root, "nope")], home);
    expect(r).toEqual({ code: 2, stderr: expect.stringContaining("no such task file or folder") });
  });

  it("neither a task nor --resume", async () => {
    const r = await scifi(["run"], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("give a SAM task file (or its folder), or --resume RUN");
  });

  it("both a task and --resume", async () => {
    const r = await scifi(["run", "x.md", "--resume", "r1"], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("give either a task or --resume RUN, not both");
  });

  it("an unknown run to resume", async () => {
    const r = await scifi(["run", "--resume", "20991231-000000-none-000000"], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no run '20991231-000000-none-000000' under .*runs/);
  });

  it("a run folder without sam.json is refused before anything is pruned or read", async () => {
    const dir = join(home, "runs", "20991231-000000-nosam-000000");
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, "state.json"),
      JSON.stringify({ version: 1, runId: "20991231-000000-nosam-000000", backend: "docker" }),
    );
    const r = await scifi(["run", "--resume", "20991231-000000-nosam-000000"], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/cannot be resumed: its run folder has no sam.json .*start the task again/);
    expect(r.stderr).not.toMatch(/ENOENT/);
  });

  it("an unknown backend lists the valid ones", async () => {
    const task = join(REPO, "tasks/examples/gfortran-build-run/task.md");
    const r = await scifi(["run", task, "--backend", "podman", "--model", `scripted:${script}`], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown sandbox backend 'podman'; valid backends: apptainer, docker");
  });

  it("no model and no models config", async () => {
    const task = join(REPO, "tasks/examples/gfortran-build-run/task.md");
    const r = await scifi(["run", task], home);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("no model given and no models config");
  });
});
