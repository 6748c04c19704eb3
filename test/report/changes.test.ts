// The task-folder snapshot is host-side code over agent files: links are recorded, never followed;
// FIFOs are never opened (the walk would block); sizes are capped; the comparison and the diff.
import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  compareSnapshots,
  diffLines,
  MAX_TEXT_BYTES,
  snapshotTaskFolder,
} from "../../runner/report/changes.ts";
import { changesView } from "../../runner/report/changes-view.ts";

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-changes-"));
  mkdirSync(join(dir, "sub"));
  writeFileSync(join(dir, "a.txt"), "one\ntwo\nthree\n");
  writeFileSync(join(dir, "sub", "b.bin"), Buffer.from([0, 1, 2, 3]));
  return dir;
}

describe("task-folder snapshots", () => {
  it("records links without following them and never opens a FIFO", async () => {
    const dir = folder();
    const outside = mkdtempSync(join(tmpdir(), "scifi-outside-"));
    writeFileSync(join(outside, "secret.txt"), "host secret\n");
    symlinkSync(join(outside, "secret.txt"), join(dir, "leak.txt"));
    symlinkSync(outside, join(dir, "dirlink"));
    execFileSync("mkfifo", [join(dir, "pipe")]);
    const snap = await snapshotTaskFolder(dir, "start");
    expect(snap.files["leak.txt"]).toMatchObject({ kind: "link", target: join(outside, "secret.txt") });
    expect(snap.files["leak.txt"]?.text).toBeUndefined();
    expect(snap.files.dirlink?.kind).toBe("link");
    expect(Object.keys(snap.files).some((p) => p.startsWith("dirlink/"))).toBe(false);
    expect(snap.files.pipe).toMatchObject({ kind: "other" });
    expect(snap.files["a.txt"]?.text).toBe("one\ntwo\nthree\n");
    expect(snap.files["sub/b.bin"]?.text).toBeUndefined();
    expect(snap.files["sub/b.bin"]?.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("keeps no contents of a large (sparse) file, only its size", async () => {
    const dir = folder();
    writeFileSync(join(dir, "big.txt"), "");
    truncateSync(join(dir, "big.txt"), MAX_TEXT_BYTES + 1);
    const snap = await snapshotTaskFolder(dir, "start");
    expect(snap.files["big.txt"]).toMatchObject({ kind: "file", size: MAX_TEXT_BYTES + 1 });
    expect(snap.files["big.txt"]?.text).toBeUndefined();
  });

  it("stops at the entry cap and says the snapshot is partial", async () => {
    const dir = folder();
    for (let i = 0; i < 20; i++) writeFileSync(join(dir, `f${i}`), "x");
    const snap = await snapshotTaskFolder(dir, "start", { maxEntries: 5 });
    expect(snap.partial).toMatch(/more than 5 entries/);
  });

  it("a later snapshot carries unchanged files over, and re-reads one whose mtime the agent set back", async () => {
    const dir = folder();
    writeFileSync(join(dir, "big.bin"), Buffer.alloc(MAX_TEXT_BYTES + 1, 7));
    const start = await snapshotTaskFolder(dir, "start");
    expect(start.files["big.bin"]?.sha256).toBeUndefined(); // not kept, so not read
    expect(start.files["a.txt"]?.text).toBe("one\ntwo\nthree\n");
    const { mtime } = statSync(join(dir, "a.txt"));
    writeFileSync(join(dir, "a.txt"), "one\nTWO\nthree\n"); // same size
    utimesSync(join(dir, "a.txt"), mtime, mtime); // touch -d: the mtime says "unchanged", the ctime not
    const end = await snapshotTaskFolder(dir, "end", { since: start });
    expect(end.files["sub/b.bin"]?.sha256).toBe(start.files["sub/b.bin"]?.sha256);
    expect(compareSnapshots(start, end).map((c) => [c.path, c.kind])).toEqual([["a.txt", "changed"]]);
    expect(end.files["a.txt"]?.text).toBe("one\nTWO\nthree\n");
  });

  it("compares snapshots: created, changed, deleted, with a line diff", async () => {
    const dir = folder();
    const before = await snapshotTaskFolder(dir, "start");
    writeFileSync(join(dir, "a.txt"), "one\n2\nthree\n");
    writeFileSync(join(dir, "new.txt"), "hello\n");
    unlinkSync(join(dir, "sub", "b.bin"));
    const after = await snapshotTaskFolder(dir, "end", { images: true });
    expect(compareSnapshots(before, after).map((c) => [c.path, c.kind])).toEqual([
      ["a.txt", "changed"],
      ["new.txt", "created"],
      ["sub/b.bin", "deleted"],
    ]);
    const view = changesView({ start: before, iterations: [], end: after });
    const a = view.overall?.files.find((f) => f.path === "a.txt");
    expect(a?.diff?.hunks[0]?.lines.map((l) => `${l.op}${l.text}`)).toEqual([" one", "-two", "+2", " three"]);
    expect(view.overall?.files.find((f) => f.path === "sub/b.bin")?.note).toMatch(/size and sha256/);
  });

  it("diffs lines like diff(1)", () => {
    expect(diffLines("a\nb\nc\n", "a\nc\nd\n")?.map((l) => `${l.op}${l.text}`)).toEqual([
      " a",
      "-b",
      " c",
      "+d",
    ]);
    expect(diffLines("", "x\n")?.map((l) => `${l.op}${l.text}`)).toEqual(["+x"]);
  });
});
