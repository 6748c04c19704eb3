// Memory files (task, group, global): append-only Markdown entries with time, run and author role.
// Appends take a file lock (proper-lockfile) so concurrent runs never interleave a record, are
// fsynced, and are idempotent by entry id: a run resumed after a crash cannot write an entry twice.
import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import lockfile from "proper-lockfile";

export interface MemoryEntry {
  /** Unique within the file, e.g. `<runId>/it2/review`. Re-appending the same id is a no-op. */
  id: string;
  /** ISO time. */
  time: string;
  runId: string;
  /** Author agent role, e.g. `review`, `final_review`, `runner`. */
  role: string;
  title: string;
  body: string;
}

const ENTRY_MARK = /^<!-- scifi-entry (\S+) -->$/m;

export function formatEntry(entry: MemoryEntry): string {
  const body = entry.body.trimEnd();
  return `<!-- scifi-entry ${entry.id} -->\n### ${entry.title}\n_${entry.time} · run ${entry.runId} · ${entry.role}_\n\n${body}\n\n`;
}

/** Append an entry under the file's lock. Returns false when an entry with this id is already there. */
export async function appendEntry(file: string, entry: MemoryEntry): Promise<boolean> {
  if (/\s/.test(entry.id)) throw new Error(`memory entry id must not contain spaces: '${entry.id}'`);
  mkdirSync(dirname(file), { recursive: true });
  if (!existsSync(file)) closeSync(openSync(file, "a"));
  const release = await lockfile.lock(file, {
    realpath: false,
    stale: 30_000,
    retries: { retries: 200, minTimeout: 20, maxTimeout: 200 },
  });
  try {
    if (entryIds(readFileSync(file, "utf8")).has(entry.id)) return false;
    appendDurably(file, formatEntry(entry));
    return true;
  } finally {
    await release();
  }
}

export function readMemory(file: string): string {
  return existsSync(file) ? readFileSync(file, "utf8") : "";
}

export function entryIds(text: string): Set<string> {
  const ids = new Set<string>();
  for (const line of text.split("\n")) {
    const match = ENTRY_MARK.exec(line);
    if (match?.[1]) ids.add(match[1]);
  }
  return ids;
}

/** Parse a memory file back into entries (for tests and the `history`/`memory` views). */
export function parseEntries(text: string): { id: string; title: string; meta: string; body: string }[] {
  const chunks = text.split(/^(?=<!-- scifi-entry )/m).filter((c) => c.startsWith("<!-- scifi-entry "));
  return chunks.map((chunk) => {
    const [mark = "", title = "", meta = "", , ...rest] = chunk.split("\n");
    return {
      id: mark.replace(/^<!-- scifi-entry /, "").replace(/ -->$/, ""),
      title: title.replace(/^### /, ""),
      meta: meta.replace(/^_|_$/g, ""),
      body: rest.join("\n").trim(),
    };
  });
}

export function sha256(text: string | Buffer): string {
  return createHash("sha256").update(text).digest("hex");
}

export function appendDurably(file: string, text: string): void {
  const fd = openSync(file, "a");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
