// The task folder as the plan records it (runner/eval/task-files.ts): every entry, links as links,
// names as bytes; what differs is named; a trial's copy is the folder with only its level, as task.md.
import { chmodSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectedCopy, firstDifference, taskFiles } from "../../runner/eval/task-files.ts";

function folder(): string {
  const dir = mkdtempSync(join(tmpdir(), "task-files-"));
  mkdirSync(join(dir, "checks", "empty"), { recursive: true });
  writeFileSync(join(dir, "task.nl.md"), "nl\n");
  writeFileSync(join(dir, "task.st.md"), "st\n");
  writeFileSync(join(dir, "checks", "want.txt"), "ok\n");
  symlinkSync("/etc/passwd", join(dir, "checks", "link"));
  return dir;
}

describe("task folder entries", () => {
  it("records files by content, links by target (not followed), folders, and names that are not UTF-8", async () => {
    const dir = folder();
    writeFileSync(Buffer.concat([Buffer.from(`${dir}/`), Buffer.from([0x66, 0xff])]), "x");
    const files = await taskFiles(dir);
    expect(Object.keys(files).sort()).toEqual(
      [
        "checks",
        "checks/empty",
        "checks/link",
        "checks/want.txt",
        "f\\xff",
        "task.nl.md",
        "task.st.md",
      ].sort(),
    );
    expect(files["checks/want.txt"]).toMatch(/^file 6[0-7]{2} [0-9a-f]{64}$/);
    expect(files["checks/link"]).toBe(`link ${Buffer.from("/etc/passwd").toString("hex")}`);
    expect(files["checks/empty"]).toBe("dir");
  });

  it("names the first change: content, a link retargeted, an entry gone, one new", async () => {
    const dir = folder();
    const planned = await taskFiles(dir);
    expect(firstDifference(planned, await taskFiles(dir))).toBeUndefined();
    writeFileSync(join(dir, "checks", "want.txt"), "wrong\n");
    expect(firstDifference(planned, await taskFiles(dir))).toMatch(
      /^checks\/want\.txt changed \(a file of mode 6\d\d with SHA-256 [0-9a-f]{12}\.\.\. then, /,
    );
    const moded = await taskFiles(dir);
    chmodSync(join(dir, "checks", "want.txt"), 0o755);
    expect(firstDifference(moded, await taskFiles(dir))).toMatch(/then, a file of mode 755 /);
    const again = folder();
    const base = await taskFiles(again);
    writeFileSync(join(again, "checks", "new.sh"), "exit 0\n");
    expect(firstDifference(base, await taskFiles(again))).toBe("checks/new.sh is new");
    expect(firstDifference({ ...base, "gone.txt": "file 00" }, base)).toBe("gone.txt is gone");
    expect(firstDifference({ ...base, "checks/link": "link 00" }, base)).toBe(
      "checks/link changed (a link then, a link now)",
    );
  });

  it("a copy for one level holds that level as task.md and no other level", async () => {
    const planned = await taskFiles(folder());
    const copy = expectedCopy(planned, "task.st.md");
    expect(copy["task.md"]).toBe(planned["task.st.md"]);
    expect(copy["task.nl.md"]).toBeUndefined();
    expect(copy["task.st.md"]).toBeUndefined();
    expect(copy["checks/want.txt"]).toBe(planned["checks/want.txt"]);
    // A folder whose own task.md sits beside its levels (a shipped example): the default copy
    // keeps task.md and no level, a level's copy holds that level as task.md.
    const dir = folder();
    writeFileSync(join(dir, "task.md"), "default\n");
    const withDefault = await taskFiles(dir);
    const plain = expectedCopy(withDefault, undefined);
    expect(plain["task.md"]).toBe(withDefault["task.md"]);
    expect(Object.keys(plain).filter((f) => /^task\..+\.md$/.test(f))).toEqual([]);
    expect(expectedCopy(withDefault, "task.nl.md")["task.md"]).toBe(withDefault["task.nl.md"]);
  });

  // Root reads such a folder anyway: nothing is hidden from its walk, and there is nothing to test.
  it.skipIf(process.getuid?.() === 0)(
    "a folder the walk cannot enter is an error, not an empty one",
    async () => {
      const dir = folder();
      chmodSync(join(dir, "checks"), 0o000);
      try {
        await expect(taskFiles(dir)).rejects.toThrow();
      } finally {
        chmodSync(join(dir, "checks"), 0o755);
      }
    },
  );
});
