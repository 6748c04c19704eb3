// The one home of whole-file writes (runner/atomic-write.ts): a replaced file is the old or the new,
// a streamed fill gets the same guarantee, and an exclusive temp file is never written through a link.
import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeAtomicWith, writeFileAtomic, writeJsonAtomic } from "../runner/atomic-write.ts";

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
});
