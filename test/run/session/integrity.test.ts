// The integrity recorder (runner/run/session/integrity.ts): bounded like the network records, one overflow
// event past the quota, a resumed run's earlier events counted; and which tool results are refused
// writes of protected files (refusals naming one, not mentions or other paths); the two defences
// whose events an e2e run cannot cheaply provoke, called directly: a refused stage output (a link, a
// FIFO; a missing one is no event) and a deletion a person denied or nobody decided in time (an
// approved one is no event).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ApprovalGate, ApprovalTimedOut } from "../../../runner/approval/gate.ts";
import { decide, pendingApprovals } from "../../../runner/approval/store.ts";
import { StageOutputs } from "../../../runner/run/checks/stages.ts";
import { DeletionGuard, type Removal } from "../../../runner/run/gates/deletion.ts";
import {
  type IntegrityEvent,
  IntegrityRecorder,
  quoted,
  refusedAssetWrites,
} from "../../../runner/run/session/integrity.ts";
import type { PristineSet } from "../../../runner/run-folder/state.ts";

function event(n: number): IntegrityEvent {
  return {
    type: "integrity",
    iteration: 1,
    kind: "allowlist_refused",
    role: "work",
    call: { seq: n, id: `t${n}`, tool: "bash" },
    attempted: `bash "curl x" ${n}`,
    rule: "allow_commands",
    action: "refused",
  };
}

describe("IntegrityRecorder", () => {
  it("appends within the quota, then one overflow event and nothing more", () => {
    const seen: IntegrityEvent[] = [];
    const recorder = new IntegrityRecorder((e) => seen.push(e), 0, { events: 3, bytes: 1_000_000 });
    const kept = Array.from({ length: 6 }, (_, i) => recorder.record(event(i)));
    expect(kept).toEqual([true, true, true, false, false, false]);
    expect(seen.map((e) => e.kind)).toEqual([
      "allowlist_refused",
      "allowlist_refused",
      "allowlist_refused",
      "overflow",
    ]);
    expect(seen[3]?.attempted).toContain("3 events");
  });

  it("counts the bytes too", () => {
    const seen: IntegrityEvent[] = [];
    const size = JSON.stringify(event(0)).length + 1;
    const recorder = new IntegrityRecorder((e) => seen.push(e), 0, { events: 100, bytes: size * 2 });
    for (let i = 0; i < 5; i++) recorder.record(event(i));
    expect(seen.length).toBe(3);
    expect(seen[2]?.kind).toBe("overflow");
  });

  it("a resumed run's earlier events count against the quota", () => {
    const seen: IntegrityEvent[] = [];
    const full = new IntegrityRecorder((e) => seen.push(e), 3, { events: 3, bytes: 1_000_000 });
    expect(full.record(event(1))).toBe(false);
    expect(seen).toEqual([]);
    const some = new IntegrityRecorder((e) => seen.push(e), 2, { events: 3, bytes: 1_000_000 });
    expect(some.record(event(1))).toBe(true);
    expect(some.count).toBe(3);
  });

  it("quotes agent text on one line, bounded", () => {
    expect(quoted('a"\nb')).toBe('"a\\"\\nb"');
    expect(quoted("x".repeat(1000), 10)).toBe(`"${"x".repeat(10)}…"`);
  });
});

const pristine: PristineSet = {
  files: [
    { rel: "task.md", kind: "sam", hidden: false, sha256: "a", mode: 0o644 },
    { rel: "checks/check.py", kind: "asset", hidden: false, sha256: "b", mode: 0o755 },
    { rel: "checks/ref.json", kind: "asset", hidden: true, sha256: "c", mode: 0o644 },
  ],
  folders: ["checks"],
};

describe("refusedAssetWrites", () => {
  it.each([
    ["sh: 1: cannot create checks/check.py: Read-only file system", ["checks/check.py"]],
    ["cp: cannot create regular file '/task/checks/check.py': Read-only file system", ["checks/check.py"]],
    ["mv: cannot move 'checks/check.py' to 'x': Device or resource busy", ["checks/check.py"]],
    ["OSError: [Errno 30] Read-only file system: './task.md'", ["task.md"]],
    ["rm: cannot remove 'task.md': Device or resource busy", ["task.md"]],
  ])("a refusal naming a protected file: %s", (line, want) => {
    expect(refusedAssetWrites(`exit code: 1\nstderr:\n${line}`, pristine)).toEqual(want);
  });

  it.each([
    ["cat: checks/check.py: No such file or directory"],
    ["sh: cannot create data/out.txt: Read-only file system"],
    ["sh: cannot create checks/check.py.bak: Read-only file system"],
    ["sh: cannot create old-task.md: Read-only file system"],
    // A mode, owner or times change cannot change what the check does (docs/integrity.md).
    ["chmod: changing permissions of 'checks/check.py': Read-only file system"],
    ["touch: cannot touch 'checks/check.py': Read-only file system"],
    // A hidden asset is not in any agent's sandbox: a write there is a guess, not a refused path.
    ["sh: cannot create checks/ref.json: Read-only file system"],
  ])("not a refused write of a protected file: %s", (line) => {
    expect(refusedAssetWrites(line, pristine)).toEqual([]);
  });

  it.each([
    ["sh: 1: cannot create checks//check.py: Read-only file system", "", ["checks/check.py"]],
    ["sh: 1: cannot create ./checks/../checks/check.py: Read-only file system", "", ["checks/check.py"]],
    ["sh: 1: cannot create /task/./checks/check.py: Read-only file system", "", ["checks/check.py"]],
    // The cwd is not known: the asset's name, with the command naming its folder.
    [
      "sh: 1: cannot create check.py: Read-only file system",
      "cd checks && printf x > check.py",
      ["checks/check.py"],
    ],
    [
      "OSError: [Errno 30] Read-only file system: 'check.py'",
      "python3 -c \"os.chdir('checks')\"",
      ["checks/check.py"],
    ],
    [
      "sh: 1: cannot create c/check.py: Read-only file system",
      "ln -s checks c && printf x > c/check.py",
      ["checks/check.py"],
    ],
    ["sh: 1: cannot create check.py: Read-only file system", "cd mychecks && printf x > check.py", []],
    // sed -i renames its temporary file over the bound asset: an attempt on the folder.
    [
      "sed: cannot rename checks/sedkhfC5W: Device or resource busy",
      "sed -i s/a/b/ checks/check.py",
      ["checks"],
    ],
    ["sed: cannot rename data/sedkhfC5W: Device or resource busy", "sed -i s/a/b/ data/x", []],
  ])("another spelling of a refused asset write: %s (%s)", (line, command, want) => {
    expect(refusedAssetWrites(line, pristine, undefined, command)).toEqual(want);
  });

  it("write_file's refusal names the path in its input", () => {
    const output =
      "Tool 'write_file' failed: PathRefused: refused path '/task/checks/check.py': it lies in a read-only mount";
    expect(refusedAssetWrites(output, pristine, "/task/checks/check.py")).toEqual(["checks/check.py"]);
    expect(refusedAssetWrites(output, pristine, "./checks/check.py")).toEqual(["checks/check.py"]);
    expect(refusedAssetWrites(output, pristine, "checks//check.py")).toEqual(["checks/check.py"]);
    expect(refusedAssetWrites(output, pristine, "/task/checks/../checks/check.py")).toEqual([
      "checks/check.py",
    ]);
    expect(
      refusedAssetWrites("refused path '/task/data/x': it lies in a read-only mount", pristine, "data/x"),
    ).toEqual([]);
  });
});

describe("the defences' callbacks", () => {
  it("a declared output that is a link or a FIFO is refused and reported; a missing one is not", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-integrity-outputs-"));
    mkdirSync(join(dir, "out"));
    writeFileSync(join(dir, "out", "ok.json"), "[]");
    symlinkSync("/etc/passwd", join(dir, "out", "link.txt"));
    execFileSync("mkfifo", [join(dir, "out", "fifo")]);
    const refused: string[] = [];
    const outputs = new StageOutputs(`${dir}-outputs`, [], (rel, why) => refused.push(`${rel}: ${why}`));
    const problems = outputs.collect(dir, ["out/ok.json", "out/link.txt", "out/fifo", "missing.txt"]);
    expect(problems).toHaveLength(3);
    expect(refused.map((r) => r.split(":")[0])).toEqual(["out/link.txt", "out/fifo"]);
    rmSync(dir, { recursive: true, force: true });
    rmSync(`${dir}-outputs`, { recursive: true, force: true });
  });

  it("a deletion a person denied is reported as undone; an approved one is not", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-integrity-delete-"));
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(join(home, "runs", "r1"), { recursive: true });
    mkdirSync(task);
    writeFileSync(join(task, "a.txt"), "a\n");
    writeFileSync(join(task, "b.txt"), "b\n");
    const gate = new ApprovalGate({ home, runId: "r1", required: ["delete"], pollMs: 20 });
    const undone: { files: string[]; when: string | undefined }[] = [];
    const guard = DeletionGuard.open({
      taskDir: task,
      dir: join(home, "runs", "r1", "deletion"),
      gate,
      onUndone: (removals: readonly Removal[], when) =>
        undone.push({ files: removals.map((r) => r.file.rel), when }),
    });
    const answer = async (approve: boolean) => {
      for (let i = 0; i < 500; i++) {
        const pending = pendingApprovals(home)[0];
        if (pending)
          return decide(home, "r1", pending.request.id, approve, approve ? undefined : "keep it", "carol");
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error("no approval request appeared");
    };
    rmSync(join(task, "a.txt"));
    const denied = guard.afterPass("by a job");
    await answer(false);
    expect(await denied).toBe("denied");
    expect(undone).toEqual([{ files: ["a.txt"], when: "by a job" }]);
    rmSync(join(task, "b.txt"));
    const approved = guard.afterPass();
    await answer(true);
    expect(await approved).toBe("approved");
    expect(undone).toHaveLength(1);
    rmSync(root, { recursive: true, force: true });
  });

  it("a deletion nobody decided before the deadline is reported as undone; the timeout still ends the run (blocked)", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-integrity-delete-timeout-"));
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(join(home, "runs", "r1"), { recursive: true });
    mkdirSync(task);
    writeFileSync(join(task, "a.txt"), "a\n");
    writeFileSync(join(task, "b.txt"), "b\n");
    const gate = new ApprovalGate({ home, runId: "r1", required: ["delete"], pollMs: 20, timeoutSec: 0.2 });
    const undone: { files: string[]; when: string | undefined }[] = [];
    const guard = DeletionGuard.open({
      taskDir: task,
      dir: join(home, "runs", "r1", "deletion"),
      gate,
      onUndone: (removals: readonly Removal[], when) =>
        undone.push({ files: removals.map((r) => r.file.rel), when }),
    });
    rmSync(join(task, "a.txt"));
    rmSync(join(task, "b.txt"));
    // Two requests (one a file): the first times out, the second is never asked; both stay put back.
    await expect(guard.afterPass("by a job")).rejects.toBeInstanceOf(ApprovalTimedOut);
    expect(undone).toEqual([{ files: ["a.txt", "b.txt"], when: "by a job" }]);
    expect(readFileSync(join(task, "a.txt"), "utf8")).toBe("a\n");
    expect(readFileSync(join(task, "b.txt"), "utf8")).toBe("b\n");
    rmSync(root, { recursive: true, force: true });
  });
});
