// The integrity recorder (runner/run/integrity.ts): bounded like the network records, one overflow
// event past the quota, a resumed run's earlier events counted; and which tool results are refused
// writes of protected files (refusals naming one, not mentions or other paths).
import { describe, expect, it } from "vitest";
import {
  type IntegrityEvent,
  IntegrityRecorder,
  quoted,
  refusedAssetWrites,
} from "../../runner/run/integrity.ts";
import type { PristineSet } from "../../runner/run-folder/state.ts";

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
    // A hidden asset is not in any agent's sandbox: a write there is a guess, not a refused path.
    ["sh: cannot create checks/ref.json: Read-only file system"],
  ])("not a refused write of a protected file: %s", (line) => {
    expect(refusedAssetWrites(line, pristine)).toEqual([]);
  });

  it("write_file's refusal names the path in its input", () => {
    const output =
      "Tool 'write_file' failed: PathRefused: refused path '/task/checks/check.py': it lies in a read-only mount";
    expect(refusedAssetWrites(output, pristine, "/task/checks/check.py")).toEqual(["checks/check.py"]);
    expect(refusedAssetWrites(output, pristine, "./checks/check.py")).toEqual(["checks/check.py"]);
    expect(
      refusedAssetWrites("refused path '/task/data/x': it lies in a read-only mount", pristine, "data/x"),
    ).toEqual([]);
  });
});
