// A37-5 (attacker on issue 37, hidden content): docs/loop.md says the search finds the reference's
// blob "in git history" as a loose object or in a pack index, and refuses a `.pack` without its
// index. A git bundle (`git bundle create backup.bundle --all`, a common way to keep or send a
// repository's history as one file) is a pack with a short header, and neither name ends in `.pack`
// nor has an `.idx`: it is not looked at. A scientist who followed the fix ("run the task on a
// copy without .git") but kept the bundle in the folder gets `validate` OK, and the agent runs
// `git clone backup.bundle` (or inflates the pack itself) to read the reference.
// Broke when found; fixed since, so this passes: no error. Fix: look into `*.bundle` (and any file starting `# v2 git bundle` /
// `# v3 git bundle`, or holding `PACK` at a pack header) as a pack without an index: refuse.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hiddenContentDiagnostics } from "../../runner/sam/hidden-content.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { SECRET, writeHiddenTask } from "../sam/hidden-task.ts";

function git(dir: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "gc.auto=0", ...args], {
    cwd: dir,
    encoding: "utf8",
  });
}

describe("A37-5: the reference's history kept as a git bundle in the task folder", () => {
  const dir = mkdtempSync(join(tmpdir(), "a37-bundle-"));
  writeHiddenTask(dir, "hidden-bundle");
  mkdirSync(join(dir, "backup"));
  git(dir, "init", "-q");
  git(dir, "add", "checks", "task.md");
  git(dir, "commit", "-qm", "task");
  git(dir, "bundle", "create", "-q", "backup/task.bundle", "--all");

  it("holds the reference: an agent clones it (control: with .git still there the search refuses)", () => {
    const before = hiddenContentDiagnostics(samOf(dir)).filter((d) => d.severity === "error");
    expect(before.map((d) => d.message).join("\n")).toContain("in the git history");
    const clone = mkdtempSync(join(tmpdir(), "a37-bundle-clone-"));
    git(clone, "clone", "-q", join(dir, "backup", "task.bundle"), "r");
    expect(readFileSync(join(clone, "r", "checks", "secret.json"), "utf8")).toBe(SECRET);
    rmSync(clone, { recursive: true, force: true });
  });

  it("is refused once .git is gone and only the bundle keeps the history", () => {
    rmSync(join(dir, ".git"), { recursive: true, force: true });
    const errors = hiddenContentDiagnostics(samOf(dir)).filter((d) => d.severity === "error");
    expect(errors.map((d) => d.message).join("\n")).toContain("backup/task.bundle");
  });
});

function samOf(dir: string) {
  const parsed = parseSamSync(join(dir, "task.md"));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return parsed.sam;
}
