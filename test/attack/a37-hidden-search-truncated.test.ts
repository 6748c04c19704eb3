// A37-4 (attacker on issue 37, hidden content): the search for a hidden asset's content stops after
// HIDDEN_SEARCH_MAX_ENTRIES (500,000) entries and then only WARNS ("only the first were searched");
// `scifi validate` says OK and `scifi run` starts. A scientist's task folder with a large data set
// (500,000 image tiles or event files: common) and a .git that the walk reaches after the data
// keeps the reference's blob in reach of the agent, as in issue 37 class 4. The search should
// refuse what it could not search ("refuse rather than parse where detection is uncertain"), or
// look at version-control folders first. Broke when found; fixed since, so this passes: no error, only the warning.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hiddenContentDiagnostics } from "../../runner/sam/hidden-content.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import type { SamDocument } from "../../runner/sam/types.ts";
import { SECRET, writeHiddenTask } from "../sam/hidden-task.ts";

function git(dir: string, ...args: string[]): void {
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "gc.auto=0", ...args], {
    cwd: dir,
  });
}

function samOf(dir: string): SamDocument {
  const parsed = parseSamSync(join(dir, "task.md"));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  return parsed.sam;
}

// The search's limit is lowered here (the product's is HIDDEN_SEARCH_MAX_ENTRIES, 500,000): the
// attacker's folder had 500,001 files; the rule is the same at any limit.
const LIMIT = 2_000;

describe("A37-4: a task folder with more files than the search reads, and the reference in .git", () => {
  it("is refused (it was: validate OK, only a warning)", () => {
    const dir = mkdtempSync(join(tmpdir(), "a37-trunc-"));
    writeHiddenTask(dir, "hidden-truncated");
    // Two folders in the order the walk meets them (readdir order is the file system's): the data
    // set first, then the scientist's analysis repository, whose history holds the reference (made
    // there, then removed from its working tree: the blob stays in .git/objects).
    mkdirSync(join(dir, "a"));
    mkdirSync(join(dir, "b"));
    const [data, repo] = readdirSync(dir).filter((n) => n === "a" || n === "b") as [string, string];
    writeFileSync(join(dir, repo, "reference.json"), SECRET);
    git(join(dir, repo), "init", "-q");
    git(join(dir, repo), "add", ".");
    git(join(dir, repo), "commit", "-qm", "make the reference");
    git(join(dir, repo), "rm", "-q", "reference.json");
    git(join(dir, repo), "commit", "-qm", "moved to the task");
    // Control: before the data set arrives the same folder is refused, naming the repository's blob.
    const before = hiddenContentDiagnostics(samOf(dir), undefined, LIMIT).map((d) => d.message);
    expect(before.join("\n")).toContain(`in the git history as loose object`);
    expect(before.join("\n")).toContain(`${repo}/.git/objects/`);
    execFileSync("bash", ["-c", `seq -f 'tile-%.0f.bin' 1 ${LIMIT + 1} | xargs touch`], {
      cwd: join(dir, data),
    });
    const diagnostics = hiddenContentDiagnostics(samOf(dir), undefined, LIMIT);
    rmSync(dir, { recursive: true, force: true });
    // It was one warning and no error, so the run started with the blob in .git/objects.
    expect(diagnostics.map((d) => d.severity)).toContain("error");
    expect(diagnostics.map((d) => d.message).join("\n")).toContain(`more than ${LIMIT} files`);
  }, 300_000);
});
