// `approval: [delete]` with the real CLI and a real Docker sandbox, scripted agent (labelled
// scripted): files that existed at run start, removed or truncated through bash (`rm`, `truncate`,
// `rm -r`), write_file and edit_file, are put back at once and asked for; approved, the runner removes
// or truncates them itself; denied, they stay and the agent reads the reason. A file the agent made
// itself is removed without asking.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type ApprovalView, pendingApprovals, runApprovals } from "../../runner/approval/store.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../run/harness.ts";

const CLI = join(REPO, "bin", "scifi.js");
const FIXTURES = join(REPO, "test", "fixtures", "approval");
const roots: string[] = [];

function scifi(home: string, args: string[]): number {
  try {
    execFileSync(process.execPath, [CLI, ...args], {
      env: { ...process.env, SCIFI_HOME: home },
      stdio: ["ignore", "pipe", "pipe"],
    });
    return 0;
  } catch (error) {
    return (error as { status: number }).status;
  }
}

async function nextPending(
  home: string,
  child: ChildProcess,
  out: () => string,
  seen: Set<string>,
): Promise<ApprovalView> {
  for (let i = 0; i < 600; i++) {
    const found = pendingApprovals(home).find((v) => !seen.has(v.request.id));
    if (found) {
      seen.add(found.request.id);
      return found;
    }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no approval request appeared:\n${out()}`);
}

describe.skipIf(!hasEngine("docker"))("approval: [delete], real CLI and Docker (scripted agent)", () => {
  afterAll(() => {
    for (const root of roots) rmSync(root, { recursive: true, force: true });
  });

  it("every removal or truncation of a start file is undone and asked; approved happens, denied does not", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-delete-e2e-"));
    roots.push(root);
    const home = join(root, "home");
    const taskDir = join(root, "task");
    mkdirSync(home);
    mkdirSync(join(taskDir, "data"), { recursive: true });
    writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "delete.md"), "utf8"));
    for (const f of ["a.csv", "b.csv", "c.csv", "d.txt"])
      writeFileSync(join(taskDir, "data", f), `${f},1,2,3\n`);
    writeFileSync(join(taskDir, "data", "e.txt"), "a much longer line of text\n");
    let out = "";
    const child = spawn(
      process.execPath,
      [CLI, "run", join(taskDir, "task.md"), "--model", `scripted:${join(FIXTURES, "delete.yaml")}`],
      {
        cwd: root,
        env: { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const seen = new Set<string>();
    let runId = "";
    const steps: { file: string; summary: string; approve: boolean; reason?: string }[] = [
      { file: "a.csv", summary: "delete data/a.csv", approve: false, reason: "keep a" },
      { file: "b.csv", summary: "truncate data/b.csv", approve: true },
      { file: "c.csv", summary: "delete data/c.csv", approve: true },
      { file: "d.txt", summary: "truncate data/d.txt", approve: false, reason: "keep d" },
      { file: "e.txt", summary: "truncate data/e.txt", approve: true },
    ];
    // What each file holds once put back: its start content, then what an approval put in place.
    const held: Record<string, string> = {
      "a.csv": "a.csv,1,2,3\n",
      "b.csv": "b.csv,1,2,3\n",
      "c.csv": "c.csv,1,2,3\n",
      "d.txt": "d.txt,1,2,3\n",
      "e.txt": "a much longer line of text\n",
    };
    for (const step of steps) {
      const view = await nextPending(home, child, () => out, seen);
      runId = view.runId;
      expect(view.request).toMatchObject({ action: "delete", summary: step.summary });
      // Undone before the request waits: the file is back, whole.
      expect(readFileSync(join(taskDir, "data", step.file), "utf8")).toBe(held[step.file]);
      const args = step.approve
        ? ["approve", view.runId, view.request.id]
        : ["deny", view.runId, view.request.id, "--reason", step.reason ?? ""];
      expect(scifi(home, args)).toBe(0);
    }
    // data/ swapped for a link out of the task folder: every file under it back in a real folder,
    // one request a file (each denied).
    held["b.csv"] = "";
    held["e.txt"] = "short\n";
    const swapped = new Set<string>();
    for (let n = 0; n < 4; n++) {
      const view = await nextPending(home, child, () => out, seen);
      const file = /^delete data\/(a\.csv|b\.csv|d\.txt|e\.txt)$/.exec(view.request.summary)?.[1];
      expect(file, view.request.summary).toBeDefined();
      swapped.add(file ?? "");
      expect(lstatSync(join(taskDir, "data")).isDirectory()).toBe(true);
      expect(readFileSync(join(taskDir, "data", file ?? ""), "utf8")).toBe(held[file ?? ""]);
      expect(scifi(home, ["deny", view.runId, view.request.id, "--reason", "keep the folder"])).toBe(0);
    }
    expect([...swapped].sort()).toEqual(["a.csv", "b.csv", "d.txt", "e.txt"]);
    expect(await exited, out).toBe(0);
    expect(readFileSync(join(taskDir, "data", "a.csv"), "utf8")).toBe("a.csv,1,2,3\n");
    expect(readFileSync(join(taskDir, "data", "b.csv"), "utf8")).toBe("");
    expect(existsSync(join(taskDir, "data", "c.csv"))).toBe(false);
    expect(readFileSync(join(taskDir, "data", "d.txt"), "utf8")).toBe("d.txt,1,2,3\n");
    expect(readFileSync(join(taskDir, "data", "e.txt"), "utf8")).toBe("short\n");
    // Nine requests (one a file): the agent's own file (made and removed in one call) asked nothing.
    expect(runApprovals(home, runId)).toHaveLength(9);
    expect(lstatSync(join(taskDir, "data")).isDirectory()).toBe(true);
    // The agent read the outcome as its tool result: the denial with its reason.
    const audit = readFileSync(join(home, "runs", runId, "audit.jsonl"), "utf8");
    expect(audit).toMatch(
      /put back from the runner's copy at once[^"]*data\/a.csv: a person denied it \([^)]*\): keep a/,
    );
    expect(audit).toMatch(/data\/b.csv: a person approved it [^"]*the runner has now truncated it/);
  }, 600_000);

  it("a start file removed by the agent's code while a check ran never reaches the task folder: nothing to ask", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-delete-e2e-"));
    roots.push(root);
    const home = join(root, "home");
    const taskDir = join(root, "task");
    mkdirSync(home);
    mkdirSync(join(taskDir, "data"), { recursive: true });
    writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "delete-check.md"), "utf8"));
    writeFileSync(join(taskDir, "data", "a.csv"), "1,2,3\n");
    let out = "";
    const child = spawn(
      process.execPath,
      [CLI, "run", join(taskDir, "task.md"), "--model", `scripted:${join(FIXTURES, "delete-check.yaml")}`],
      {
        cwd: root,
        env: { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    // The check ran `rm data/a.csv` on its own view of the folder (docs/loop.md, Checks in stages):
    // the run ends without a request, and the file was never gone from the task folder.
    expect(await exited, out).toBe(0);
    const runs = readdirSync(join(home, "runs"), { withFileTypes: true }).filter((e) => e.isDirectory());
    expect(runs).toHaveLength(1);
    expect(runApprovals(home, (runs[0] as { name: string }).name)).toEqual([]);
    expect(readFileSync(join(taskDir, "data", "a.csv"), "utf8")).toBe("1,2,3\n");
  }, 300_000);

  it.skipIf(!hasEngine("slurm"))(
    "a SLURM job of the run that removes or rewrites a start file: put back and asked like the agent's own call (issue 25)",
    async () => {
      const root = mkdtempSync(join(tmpdir(), "scifi-delete-e2e-"));
      roots.push(root);
      const home = join(root, "home");
      const taskDir = join(root, "task");
      mkdirSync(home);
      mkdirSync(join(taskDir, "data"), { recursive: true });
      writeFileSync(join(taskDir, "task.md"), readFileSync(join(FIXTURES, "delete-jobs.md"), "utf8"));
      writeFileSync(join(taskDir, "data", "a.csv"), "1,2,3\n");
      writeFileSync(join(taskDir, "data", "b.csv"), "4,5,6,7,8,9\n");
      let out = "";
      const child = spawn(
        process.execPath,
        [CLI, "run", join(taskDir, "task.md"), "--model", `scripted:${join(FIXTURES, "delete-jobs.yaml")}`],
        {
          cwd: root,
          env: { ...process.env, SCIFI_HOME: home, SCIFI_APPROVAL_POLL_MS: "200" },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child.stdout?.on("data", (d: Buffer) => (out += d.toString()));
      child.stderr?.on("data", (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
      const seen = new Set<string>();
      const removed = await nextPending(home, child, () => out, seen);
      expect(removed.request).toMatchObject({ action: "delete", summary: "delete data/a.csv" });
      expect(readFileSync(join(taskDir, "data", "a.csv"), "utf8")).toBe("1,2,3\n");
      expect(scifi(home, ["deny", removed.runId, removed.request.id, "--reason", "keep a"])).toBe(0);
      const rewritten = await nextPending(home, child, () => out, seen);
      expect(rewritten.request).toMatchObject({ action: "delete", summary: "rewrite data/b.csv" });
      expect(rewritten.request.detail).toContain(
        "data/b.csv: rewritten (rewritten, 12 -> 13 bytes; first difference at byte 0",
      );
      expect(readFileSync(join(taskDir, "data", "b.csv"), "utf8")).toBe("4,5,6,7,8,9\n");
      expect(scifi(home, ["approve", rewritten.runId, rewritten.request.id])).toBe(0);
      expect(await exited, out).toBe(0);
      expect(readFileSync(join(taskDir, "data", "a.csv"), "utf8")).toBe("1,2,3\n");
      expect(readFileSync(join(taskDir, "data", "b.csv"), "utf8")).toBe("XXXXXXXXXXXX\n");
      expect(runApprovals(home, removed.runId)).toHaveLength(2);
    },
    600_000,
  );
});
