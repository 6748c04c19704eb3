// Memory files (task, group, global): append-only Markdown entries with time, run and author role.
// Appends take a file lock (proper-lockfile) so concurrent runs never interleave a record, are
// fsynced, and are idempotent: a run resumed after a crash cannot write the same entry twice.
//
// Entries cannot be forged. Their fields carry agent text (a work claim, review findings, final
// review suggestions), so before writing every field is neutralised: each `<!--` becomes `<!\--`
// (text to a reader, to a Markdown renderer and to the HTML report, never a comment or a mark),
// and the one-line fields lose their line breaks. No written line of agent text can then be an
// entry mark, however it was spelled (spaces, case, split over lines): the only mark lines in a
// file are the runner's own. And an id is never claimed in advance: an append is skipped only when
// an entry with the same id *and* the same title and body is already there (a resumed run
// repeating itself), so a mark planted earlier (in a file written before neutralising) never
// suppresses the real entry; the real one is written after it, and a reader sees both.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import lockfile from "proper-lockfile";
import { appendDurably } from "../atomic-write.ts";

export interface MemoryEntry {
  /** Unique within the file, e.g. `<runId>/it2/review`. Re-appending the same entry is a no-op. */
  id: string;
  /** ISO time. */
  time: string;
  runId: string;
  /** Author agent role, e.g. `review`, `final_review`, `runner`. */
  role: string;
  title: string;
  body: string;
}

/** A mark line as the runner writes it, whole; nothing else starts an entry. */
const ENTRY_MARK = /^<!-- scifi-entry (\S+) -->$/;
const ENTRY_START = /^(?=<!-- scifi-entry \S+ -->$)/m;

export function formatEntry(entry: MemoryEntry): string {
  const e = neutralised(entry);
  return `<!-- scifi-entry ${e.id} -->\n### ${e.title}\n_${e.time} · run ${e.runId} · ${e.role}_\n\n${e.body}\n\n`;
}

/**
 * The entry as written: no field holds `<!--` (so no line of it is a mark or opens a comment that
 * would hide the text after it), and the one-line fields hold no line break (so they cannot add
 * lines to the head of the entry, such as a second meta line).
 */
export function neutralised(entry: MemoryEntry): MemoryEntry {
  return {
    id: entry.id,
    time: oneLine(entry.time),
    runId: oneLine(entry.runId),
    role: oneLine(entry.role),
    title: oneLine(entry.title),
    body: neutralText(entry.body).trimEnd(),
  };
}

/**
 * `<!--` as text. The replacement holds no `<!--` and cannot form one with its neighbours (the
 * backslash splits it), so the result holds none at all.
 */
function neutralText(text: string): string {
  return text.replaceAll("<!--", "<!\\--");
}

function oneLine(text: string): string {
  return neutralText(text).replace(/[\r\n\u2028\u2029]+/g, " ");
}

/** Append an entry under the file's lock. Returns false when this entry is already there. */
export async function appendEntry(file: string, entry: MemoryEntry): Promise<boolean> {
  if (!ENTRY_MARK.test(`<!-- scifi-entry ${entry.id} -->`))
    throw new Error(`memory entry id must be one word without spaces: '${entry.id}'`);
  mkdirSync(dirname(file), { recursive: true });
  if (!existsSync(file)) closeSync(openSync(file, "a"));
  const release = await lockfile.lock(file, {
    realpath: false,
    stale: 30_000,
    retries: { retries: 200, minTimeout: 20, maxTimeout: 200 },
  });
  try {
    if (alreadyWritten(readFileSync(file, "utf8"), entry)) return false;
    appendDurably(file, formatEntry(entry));
    return true;
  } finally {
    await release();
  }
}

/**
 * An entry with this id, title and body is in the file (the time differs on a resumed run). The id
 * alone is not enough: text that claimed the id in advance must not drop the real entry.
 */
function alreadyWritten(text: string, entry: MemoryEntry): boolean {
  if (!entryIds(text).has(entry.id)) return false;
  const e = neutralised(entry);
  return parseEntries(text).some((w) => w.id === e.id && w.title === e.title && w.body === e.body.trim());
}

/**
 * A memory file as agents read it: each entry's title, author role and body, without its time, run
 * id or mark line (they change between two runs of the same task, and a replay must see the same
 * prompt); text outside entries (a person's notes) is kept as written. The file keeps them all.
 * `before` (an ISO time): entries written at or after it are left out, so a replay reads shared
 * memory as the recorded run did when it started (Model.memoryAsOf).
 */
export function readMemory(file: string, options: { before?: string | undefined } = {}): string {
  return existsSync(file) ? promptMemory(readFileSync(file, "utf8"), options.before) : "";
}

/** A memory file's text as written, entry marks and all ("" when there is none yet). */
export function readMemoryFile(file: string): string {
  return existsSync(file) ? readFileSync(file, "utf8") : "";
}

/** See readMemory. */
export function promptMemory(text: string, before?: string): string {
  return memoryChunks(text, before)
    .map((chunk) => chunk.text)
    .join("");
}

/**
 * readMemory's text in its parts: each entry (its title, and its text as the prompt shows it) and
 * each stretch of text outside entries (no title), in file order. Split at the runner's own entry
 * marks, never at anything agent text could write, so a shortened view cannot cut inside an entry.
 */
export function memoryChunks(text: string, before?: string): { title?: string; text: string }[] {
  return text.split(ENTRY_START).flatMap((chunk) => {
    const [mark = "", title = "", meta = "", , ...rest] = chunk.split("\n");
    if (!ENTRY_MARK.test(mark)) return chunk ? [{ text: chunk }] : [];
    const parts = meta.replace(/^_|_$/g, "").split(" · ");
    const time = Date.parse(parts[0] ?? "");
    if (before !== undefined && !(time < Date.parse(before))) return [];
    return [
      { title: title.replace(/^### /, ""), text: `${title}\n_${parts.at(-1) ?? ""}_\n\n${rest.join("\n")}` },
    ];
  });
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
  const chunks = text.split(ENTRY_START).filter((c) => ENTRY_MARK.test(c.split("\n", 1)[0] ?? ""));
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

/**
 * Appends a record and fsyncs it: all of it or, when the write fails (a full disk), nothing (the
 * file is cut back to its last complete record and a RecordWriteFailed names it).
 */
export { appendDurably };
