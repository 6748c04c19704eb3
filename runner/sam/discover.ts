// Which files in a folder are SAMs: every `task.md`, and every other `*.md` whose first line opens
// front matter (`---`). Hidden folders and node_modules are skipped; the order is sorted so that
// output is deterministic. Files referenced as sub-SAMs are dropped by the caller after parsing.
import { closeSync, openSync, readdirSync, readSync } from "node:fs";
import { join } from "node:path";

const SKIP_DIRS = new Set(["node_modules"]);

export function findSamFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (current: string): void => {
    const entries = readdirSync(current, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const path = join(current, entry.name);
      if (entry.isDirectory() && !SKIP_DIRS.has(entry.name)) walk(path);
      else if (entry.isFile() && isSamCandidate(path, entry.name)) found.push(path);
    }
  };
  walk(dir);
  return found;
}

function isSamCandidate(path: string, name: string): boolean {
  if (!name.toLowerCase().endsWith(".md")) return false;
  return name.toLowerCase() === "task.md" || startsWithFrontMatter(path);
}

function startsWithFrontMatter(path: string): boolean {
  const fd = openSync(path, "r");
  try {
    const head = Buffer.alloc(8);
    const n = readSync(fd, head, 0, head.length, 0);
    const text = head
      .subarray(0, n)
      .toString("utf8")
      .replace(/^\uFEFF/, "");
    return /^---[^-]/.test(text) || text === "---";
  } finally {
    closeSync(fd);
  }
}
