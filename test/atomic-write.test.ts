// The one home of whole-file writes (runner/atomic-write.ts): a replaced file is the old or the new,
// a streamed fill gets the same guarantee, and an exclusive temp file is never written through a link.
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  RecordWriteFailed,
  writeAtomicWith,
  writeFileAtomic,
  writeFilesAtomic,
  writeJsonAtomic,
} from "../runner/atomic-write.ts";

const folder = () => mkdtempSync(join(tmpdir(), "scifi-atomic-"));

describe("atomic writes", () => {
  it("replaces a file whole and leaves no temp file", () => {
    const dir = folder();
    const file = join(dir, "a.txt");
    writeFileSync(file, "old");
    writeFileAtomic(file, "new");
    writeJsonAtomic(join(dir, "b.json"), { x: 1 });
    expect(readFileSync(file, "utf8")).toBe("new");
    expect(JSON.parse(readFileSync(join(dir, "b.json"), "utf8"))).toEqual({ x: 1 });
    expect(existsSync(`${file}.${process.pid}.tmp`)).toBe(false);
  });

  it("a streamed fill that throws leaves the target as it was and removes the temp file", () => {
    const dir = folder();
    const file = join(dir, "a.txt");
    writeFileSync(file, "old");
    expect(() =>
      writeAtomicWith(file, (fd) => {
        writeSync(fd, "half");
        throw new Error("source vanished");
      }),
    ).toThrow("source vanished");
    expect(readFileSync(file, "utf8")).toBe("old");
    expect(existsSync(`${file}.${process.pid}.tmp`)).toBe(false);
  });

  it("an exclusive write refuses a link planted at the temp name and writes nothing through it", () => {
    const dir = folder();
    const file = join(dir, "draft.md");
    const victim = join(dir, "victim.txt");
    writeFileSync(file, "old");
    writeFileSync(victim, "victim");
    const temp = join(dir, ".draft.tmp");
    symlinkSync(victim, temp);
    expect(() => writeFileAtomic(file, "new", { tempFile: temp, exclusive: true })).toThrow(/EEXIST|exists/);
    expect(readFileSync(victim, "utf8")).toBe("victim");
    expect(readFileSync(file, "utf8")).toBe("old");
    // The planted link is not ours: it stays for the person to see.
    expect(existsSync(temp)).toBe(true);
  });

  it("several files, one folder sync: each replaced whole with its own temp name and mode; one that cannot be written stops there, itself as it was", () => {
    const dir = folder();
    const [a, b, c] = ["summary.json", "summary.csv", "other.csv"].map((n) => join(dir, n)) as [
      string,
      string,
      string,
    ];
    writeFileSync(a, "old a");
    writeFileSync(b, "old b");
    writeFilesAtomic([
      { file: a, text: "new a", options: { mode: 0o600 } },
      { file: b, text: Buffer.from("new b"), options: { tempFile: `${b}.tmp` } },
      { file: c, text: "new c" },
    ]);
    expect([a, b, c].map((f) => readFileSync(f, "utf8"))).toEqual(["new a", "new b", "new c"]);
    expect(statSync(a).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    // The second file's folder is missing and may not be made: the first is replaced, the second
    // and third are not touched, and the error names the file.
    const missing = join(dir, "gone", "x.csv");
    expect(() =>
      writeFilesAtomic([
        { file: a, text: "newer a" },
        { file: missing, text: "x", options: { createFolder: false } },
        { file: c, text: "newer c" },
      ]),
    ).toThrow(RecordWriteFailed);
    expect([a, c].map((f) => readFileSync(f, "utf8"))).toEqual(["newer a", "new c"]);
    mkdirSync(join(dir, "gone"));
    expect(readdirSync(join(dir, "gone"))).toEqual([]);
  });
});
