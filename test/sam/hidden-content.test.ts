// Hidden means the content, not the path (runner/sam/hidden-content.ts): a hidden asset's content
// reachable elsewhere in the task folder (git history, loose or packed, SHA-1 or SHA-256; a copy,
// plain or in an archive) is a validation error, in `scifi validate` and before `scifi run`
// starts (exit 2); a folder whose .git never held it passes. Repositories are made by the real git.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { hiddenContentDiagnostics } from "../../runner/sam/hidden-content.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import type { SamDocument } from "../../runner/sam/types.ts";
import { runScifi } from "../helpers/cli.ts";
import { SECRET, writeHiddenTask } from "./hidden-task.ts";

/** A task folder with one compare stage against the hidden checks/secret.json. */
function task(): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-hidden-"));
  writeHiddenTask(dir, "hidden-content");
  writeFileSync(join(dir, "result.txt"), "1\n");
  return dir;
}

function git(dir: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "gc.auto=0", ...args], {
    cwd: dir,
    encoding: "utf8",
  });
}

function sam(dir: string): SamDocument {
  const parsed = parseSamSync(join(dir, "task.md"));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return parsed.sam;
}

const messages = (dir: string) =>
  hiddenContentDiagnostics(sam(dir)).map((d) => `${d.severity}: ${d.message}`);

describe("a hidden asset's content elsewhere in the task folder", () => {
  it.each(["sha1", "sha256"])(
    "is found as a loose git object (%s repository), then packed after git gc",
    (format) => {
      const dir = task();
      git(dir, "init", "-q", `--object-format=${format}`);
      git(dir, "add", ".");
      git(dir, "commit", "-qm", "task");
      const blob = git(dir, "hash-object", "checks/secret.json").trim();
      const loose = `.git/objects/${blob.slice(0, 2)}/${blob.slice(2)}`;
      expect(messages(dir)).toEqual([
        `error: the hidden asset checks/secret.json can be read by the agents elsewhere in the task folder: in the git history as loose object ${blob} at ${loose}. Hiding its path does not hide its content: run the task on a copy of the folder without its version-control history (e.g. \`git archive\` or a copy without .git), or remove the file from the history`,
      ]);
      git(dir, "gc", "-q", "--prune=now");
      const pack = readdirSync(join(dir, ".git/objects/pack")).find((f) => f.endsWith(".idx"));
      expect(pack).toBeDefined();
      expect(messages(dir)).toEqual([
        expect.stringContaining(`in the git history (blob ${blob}) at .git/objects/pack/${pack}.`),
      ]);
      // A pack whose index is gone cannot be searched (git index-pack makes it again): refused too.
      rmSync(join(dir, ".git/objects/pack", pack ?? ""));
      expect(messages(dir)).toEqual([
        expect.stringContaining(
          "in the git history, possibly: a pack without its index (which the runner cannot check) at .git/objects/pack/",
        ),
      ]);
    },
  );

  it("is found when the file was committed and then removed (the blob stays in history)", () => {
    const dir = task();
    git(dir, "init", "-q");
    git(dir, "add", ".");
    git(dir, "commit", "-qm", "with the reference");
    git(dir, "rm", "-q", "--cached", "checks/secret.json");
    git(dir, "commit", "-qm", "reference untracked");
    git(dir, "gc", "-q", "--prune=now");
    expect(messages(dir)).toEqual([expect.stringContaining("in the git history (blob ")]);
  });

  it.each([
    [
      "an identical copy",
      (dir: string) => copyFileSync(join(dir, "checks/secret.json"), join(dir, "old-secret.json")),
      "an identical copy at old-secret.json",
    ],
    [
      "a gzip copy",
      (dir: string) => writeFileSync(join(dir, "backup.json.gz"), gzipSync(SECRET)),
      "a gzip copy at backup.json.gz",
    ],
    [
      "a copy in a tar",
      (dir: string) => execFileSync("tar", ["-cf", "backup.tar", "checks/secret.json"], { cwd: dir }),
      "a copy in the tar member checks/secret.json at backup.tar",
    ],
    [
      "a copy in a gzip'd tar",
      (dir: string) => execFileSync("tar", ["-czf", "backup.tgz", "checks/secret.json"], { cwd: dir }),
      "a copy in the tar member checks/secret.json at backup.tgz",
    ],
    [
      "a copy in a zip",
      (dir: string) =>
        execFileSync(
          "python3",
          [
            "-c",
            "import zipfile; zipfile.ZipFile('b.zip','w',zipfile.ZIP_DEFLATED).write('checks/secret.json')",
          ],
          { cwd: dir },
        ),
      "a copy in the zip member checks/secret.json at b.zip",
    ],
  ])("is found as %s", (_, make, where) => {
    const dir = task();
    make(dir);
    expect(messages(dir)).toEqual([
      expect.stringContaining(
        `elsewhere in the task folder: ${where}. Hiding its path does not hide its content: remove the copies`,
      ),
    ]);
  });

  it("passes an honest folder whose .git never held the hidden asset", () => {
    const dir = task();
    writeFileSync(join(dir, ".gitignore"), "checks/secret.json\n");
    git(dir, "init", "-q");
    git(dir, "add", ".");
    git(dir, "commit", "-qm", "task without the reference");
    writeFileSync(join(dir, "notes.json"), SECRET.replace("4242", "4243"));
    expect(messages(dir)).toEqual([]);
    git(dir, "gc", "-q", "--prune=now");
    expect(messages(dir)).toEqual([]);
  });
});

describe("scifi validate, run and submit", () => {
  it("refuse a task whose hidden asset is in the git history: validate as invalid (exit 1), run and submit before anything starts (exit 2)", async () => {
    const dir = task();
    git(dir, "init", "-q");
    git(dir, "add", ".");
    git(dir, "commit", "-qm", "task");
    const home = mkdtempSync(join(tmpdir(), "scifi-hidden-home-"));
    const validate = await runScifi(home, ["validate", dir], 60_000);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toMatch(
      /task\.md:4:1: error: the hidden asset checks\/secret\.json can be read by the agents elsewhere in the task folder: in the git history as loose object [0-9a-f]{40} at \.git\/objects\//,
    );
    const run = await runScifi(home, ["run", dir, "--model", "scripted:/nonexistent.yaml"], 60_000);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /task\.md:4:1: error: the hidden asset checks\/secret\.json can be read by the agents/,
    );
    // The one gate's refusal (runner/sam/gate.ts): the headline, then the diagnostic above.
    expect(run.stderr).toContain("is not a valid SAM (run 'scifi validate");
    expect(readdirSync(home)).not.toContain("runs");
    const submit = await runScifi(home, ["submit", dir, "--dry-run"], 60_000);
    expect(submit.code).toBe(2);
    expect(submit.stderr).toMatch(
      /task\.md:4:1: error: the hidden asset checks\/secret\.json can be read by the agents/,
    );
    rmSync(join(dir, ".git"), { recursive: true, force: true });
    expect((await runScifi(home, ["validate", dir], 60_000)).code).toBe(0);
  });
});
