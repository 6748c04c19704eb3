// Attacks on `scifi import harbor` that held (attacker session on issues 27/30, from docs/import.md):
// COPY sources outside environment/ (path traversal, an absolute path, solution/) are never copied,
// a COPY of a link is not followed, a link among the tests and a TOML bomb are refused with the
// file named. The attacks that broke are in test/open/ae-harbor-import.pending.ts.
import { cpSync, existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { importHarbor } from "../../runner/import/harbor.ts";
import { REPO } from "../run/harness.ts";

const FIXTURE = join(REPO, "test", "fixtures", "harbor", "word-count");
const root = mkdtempSync(join(tmpdir(), "ae-harbor-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function copy(dockerfile?: string): string {
  const dir = mkdtempSync(join(root, "task-"));
  cpSync(FIXTURE, dir, { recursive: true });
  if (dockerfile) writeFileSync(join(dir, "environment", "Dockerfile"), dockerfile);
  return dir;
}

/** Every file of the imported SAM folder, relative. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1))
    .sort();
}

describe("scifi import harbor: hostile task folders that are refused or kept out", () => {
  it("COPY of ../, an absolute path or solution/ copies nothing from outside environment/", () => {
    const dir = copy(
      "FROM x\nWORKDIR /app\nCOPY input.txt /app/input.txt\nCOPY ../../../../etc/passwd /app/p\nCOPY /etc/hostname /app/h\nCOPY ../solution/solve.sh /app/solve.sh\nCOPY input.txt /app/../../etc/x\n",
    );
    const r = importHarbor(dir, `${dir}-out`);
    expect(files(r.outDir)).toEqual([
      "checks/harbor/tests/expected.txt",
      "checks/harbor/tests/test.sh",
      "checks/harbor/verify.sh",
      "harbor-import.md",
      "input.txt",
      "task.md",
    ]);
    // Each refused line is listed as not mapped, not dropped in silence.
    for (const line of [4, 5, 6, 7])
      expect(r.unmapped.some((u) => u.startsWith(`Dockerfile line ${line}:`))).toBe(true);
  });

  it("a COPY source that is a link is not followed; a link among the tests is refused", () => {
    writeFileSync(join(root, "outside.txt"), "OUTSIDE\n");
    const dir = copy("FROM x\nWORKDIR /app\nCOPY input.txt /app/input.txt\nCOPY l.txt /app/l.txt\n");
    symlinkSync(join(root, "outside.txt"), join(dir, "environment", "l.txt"));
    const r = importHarbor(dir, `${dir}-out`);
    expect(existsSync(join(r.outDir, "l.txt"))).toBe(false);
    expect(r.unmapped).toContain("Dockerfile line 4: COPY l.txt: not a file or folder in environment/");

    const linked = copy();
    symlinkSync(join(root, "outside.txt"), join(linked, "tests", "more.txt"));
    expect(() => importHarbor(linked, `${linked}-out`)).toThrow(
      /tests\/more\.txt is not a regular file or folder/,
    );
  });

  it("a TOML bomb (100,000 nested arrays) is refused with the file, line and column", () => {
    const dir = copy();
    writeFileSync(join(dir, "task.toml"), `${"a = [".repeat(100_000)}${"]".repeat(100_000)}\n`);
    expect(() => importHarbor(dir, `${dir}-out`)).toThrow(/task\.toml:1:\d+: not valid TOML/);
  });
});
