// What a run changed in its task folder: a snapshot taken host-side at the run's start, after every
// work pass (when the work sandbox is gone, as the checks begin) and at the end, compared file by
// file. The task folder is the agent's: the walk never follows a link (host-paths walkTree), never
// opens a FIFO, socket or device, and reads are capped. A snapshot keeps size and times of every
// entry, and reads only what it keeps: the contents of small text files (for the diff; with their
// sha256), the hash of PDFs and, at the end, small images (shown inline in the report). It costs a
// stat per entry and a read per kept file, and a later snapshot reads only what changed (see
// snapshotTaskFolder). Names of any bytes are keys as showPath writes them. Stored in the run folder
// as `changes/<name>.json`.
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { showPath, WalkLimitExceeded, walkTree } from "../policy/tree-walk.ts";

/** Text files up to this size keep their contents (for the diff). */
export const MAX_TEXT_BYTES = 256 * 1024;
/** Images up to this size keep their bytes (shown inline). */
export const MAX_IMAGE_BYTES = 2 * 1024 * 1024;
/** All kept contents of one snapshot together. */
export const MAX_KEPT_BYTES = 16 * 1024 * 1024;
/** Entries one snapshot walks at most. */
export const MAX_SNAPSHOT_ENTRIES = 50_000;
/** PDFs up to this size are hashed (their first page is shown when they change). */
export const MAX_PDF_HASH_BYTES = 20 * 1024 * 1024;
/** A path longer than this (bytes) is not listed: the snapshot says so. */
export const MAX_SNAPSHOT_PATH_BYTES = 4096;

const IMAGE_TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  svg: "image/svg+xml",
  webp: "image/webp",
};

export interface SnapshotEntry {
  kind: "file" | "link" | "other";
  size: number;
  mtimeMs: number;
  /** The inode's change time and number: with size and mtime, what tells a file unchanged without reading it. */
  ctimeMs?: number;
  ino?: number;
  /** sha256 of a regular file's bytes; absent when its contents were not read (not kept, unreadable). */
  sha256?: string;
  /** The contents of a small UTF-8 text file. */
  text?: string;
  /** A small image's bytes (base64) and type; kept in snapshots taken with `images`. */
  image?: { mime: string; base64: string };
  /** A link's target (never followed). */
  target?: string;
  /** A PDF's first page as a PNG, rendered in a sandbox at the run's end (runner/report/pdf-pages.ts). */
  pdfPage?: { mime: string; base64: string };
  /** Why a PDF's first page is not shown (no converter in the image, the converter failed). */
  pdfNote?: string;
}

export interface Snapshot {
  label: string;
  takenAt: string;
  files: Record<string, SnapshotEntry>;
  /** Why the snapshot is partial (too many entries, content budget spent). */
  partial?: string;
}

export function isPdf(rel: string): boolean {
  return rel.toLowerCase().endsWith(".pdf");
}

/**
 * PDFs a snapshot hands over whole (not stored): those created or changed since `since` (by
 * sha256), at most `max` of them, each at most `maxBytes`; collected into `found`.
 */
export interface PdfCollector {
  since: Snapshot | undefined;
  max: number;
  maxBytes: number;
  found: Map<string, Buffer>;
}

export function imageMime(rel: string): string | undefined {
  const ext = rel.slice(rel.lastIndexOf(".") + 1).toLowerCase();
  return rel.includes(".") ? IMAGE_TYPES[ext] : undefined;
}

/**
 * Snapshots `root` without following links; never throws for what the agent did to the folder.
 * Costs a stat per entry; file contents are read only where they are kept (small text files,
 * images) or a PDF's hash is wanted, and, with `since` (the run's previous snapshot), only for files
 * whose inode, size, mtime or ctime differ from it (the rest carry their hash and contents over). A
 * file not read (a large one) has no sha256 and compares by size and mtime.
 */
export async function snapshotTaskFolder(
  root: string,
  label: string,
  options: { images?: boolean; maxEntries?: number; pdfs?: PdfCollector; since?: Snapshot } = {},
): Promise<Snapshot> {
  const files: Record<string, SnapshotEntry> = {};
  const since = options.since ?? options.pdfs?.since;
  const buffer = Buffer.allocUnsafe(READ_CHUNK);
  let kept = 0;
  const partial: string[] = [];
  const budgetSpent = "content budget spent: some contents not kept";
  try {
    await walkTree(
      root,
      (entry) => {
        if (entry.depth === 0 || entry.dirFd !== undefined) return undefined;
        const { stat, at } = entry;
        const relBytes = entry.relBytes;
        if (relBytes.length > MAX_SNAPSHOT_PATH_BYTES) {
          const note = `paths longer than ${MAX_SNAPSHOT_PATH_BYTES} bytes are not listed`;
          if (!partial.includes(note)) partial.push(note);
          return undefined;
        }
        const rel = showPath(relBytes);
        const times = { mtimeMs: stat.mtimeMs, ctimeMs: stat.ctimeMs, ino: stat.ino };
        if (stat.isSymbolicLink()) {
          const target = readLinkShown(at);
          files[rel] = { kind: "link", size: 0, ...times, target };
          return undefined;
        }
        if (!stat.isFile()) {
          files[rel] = { kind: "other", size: stat.size, ...times };
          return undefined;
        }
        const entryOut: SnapshotEntry = { kind: "file", size: stat.size, ...times };
        files[rel] = entryOut;
        const mime = imageMime(rel);
        const keepImage = options.images === true && mime !== undefined && stat.size <= MAX_IMAGE_BYTES;
        const keepText = stat.size <= MAX_TEXT_BYTES && mime === undefined && !isPdf(rel);
        const pdfs = options.pdfs;
        const pdf =
          pdfs !== undefined && isPdf(rel) && stat.size <= pdfs.maxBytes && pdfs.found.size < pdfs.max;
        // A PDF's hash tells a later snapshot whether it changed when only its ctime did.
        const hashPdf = isPdf(rel) && stat.size <= MAX_PDF_HASH_BYTES;
        const before = since?.files[rel];
        const unchanged =
          before?.kind === "file" &&
          before.size === stat.size &&
          before.mtimeMs === stat.mtimeMs &&
          before.ctimeMs === stat.ctimeMs &&
          before.ino === stat.ino;
        // Unchanged since the last snapshot: what it read carries over, when it has all we keep
        // (an unchanged PDF is not handed over again).
        if (
          unchanged &&
          (!(keepText || hashPdf) || before.sha256 !== undefined) &&
          (!keepImage || before.image)
        ) {
          if (before.sha256) entryOut.sha256 = before.sha256;
          const carried = (before.text?.length ?? 0) + (before.image ? stat.size : 0);
          if ((before.text || before.image) && kept + carried <= MAX_KEPT_BYTES) {
            kept += carried;
            if (before.text !== undefined) entryOut.text = before.text;
            if (before.image && keepImage) entryOut.image = before.image;
          } else if (before.text || before.image) partial.includes(budgetSpent) || partial.push(budgetSpent);
          return undefined;
        }
        const wanted = (keepImage || keepText) && kept + stat.size <= MAX_KEPT_BYTES;
        if ((keepImage || keepText) && !wanted && !partial.includes(budgetSpent)) partial.push(budgetSpent);
        if (!wanted && !pdf && !hashPdf) return undefined; // not kept: no need to read it
        const read = readRegular(at, stat.ino, stat.size, buffer);
        if (!read) return undefined;
        entryOut.sha256 = read.sha256;
        if (pdf && pdfs && since?.files[rel]?.sha256 !== read.sha256) {
          pdfs.found.set(rel, read.bytes);
          return undefined;
        }
        if (!wanted) return undefined;
        kept += read.bytes.length;
        if (keepImage && mime) entryOut.image = { mime, base64: read.bytes.toString("base64") };
        else if (keepText && isText(read.bytes)) entryOut.text = read.bytes.toString("utf8");
        return undefined;
      },
      { maxEntries: options.maxEntries ?? MAX_SNAPSHOT_ENTRIES },
    );
  } catch (error) {
    partial.push(
      error instanceof WalkLimitExceeded ? error.message : `the walk stopped: ${(error as Error).message}`,
    );
  }
  return {
    label,
    takenAt: new Date().toISOString(),
    files,
    ...(partial.length > 0 ? { partial: partial.join("; ") } : {}),
  };
}

const READ_CHUNK = 256 * 1024;

function readLinkShown(at: Buffer): string {
  try {
    return showPath(readlinkSync(at, { encoding: "buffer" }));
  } catch {
    return "?";
  }
}

/**
 * Reads the regular file at `at` (a /proc/self/fd path naming it without following links) whole,
 * at most `size` bytes as lstat saw it (one that grew since is not read: undefined), and hashes it.
 * O_NOFOLLOW and O_NONBLOCK: a link or a FIFO swapped in after the lstat is refused (or checked by
 * fstat) without blocking; the inode must be the one lstat saw. `scratch` is reused between files.
 */
function readRegular(
  at: Buffer,
  ino: number,
  size: number,
  scratch: Buffer,
): { sha256: string; bytes: Buffer } | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(at, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stat = fstatSync(fd);
    if (!stat.isFile() || stat.ino !== ino || stat.size > size) return undefined;
    // Each read asks for a byte more than lstat saw: a short read of a regular file is its end (one
    // read for most files), and a file that grew since is not shown partly.
    const target = size < scratch.length ? scratch : Buffer.allocUnsafe(size + 1);
    let total = 0;
    for (;;) {
      const want = size + 1 - total;
      const n = readSync(fd, target, total, want, null);
      total += n;
      if (total > size) return undefined;
      if (n < want) break;
    }
    const bytes = Buffer.from(target.subarray(0, total));
    return { sha256: createHash("sha256").update(bytes).digest("hex"), bytes };
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isText(bytes: Buffer): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Stored in the run folder.

export function changesDir(runDir: string): string {
  return join(runDir, "changes");
}

export function writeSnapshot(runDir: string, snapshot: Snapshot, name: string): void {
  mkdirSync(changesDir(runDir), { recursive: true });
  writeFileSync(join(changesDir(runDir), `${name}.json`), `${JSON.stringify(snapshot)}\n`);
}

export interface StoredSnapshots {
  start?: Snapshot;
  /** After each iteration's work pass, by iteration number. */
  iterations: { iteration: number; snapshot: Snapshot }[];
  end?: Snapshot;
}

export function readSnapshots(runDir: string): StoredSnapshots {
  const dir = changesDir(runDir);
  const result: StoredSnapshots = { iterations: [] };
  if (!existsSync(dir)) return result;
  const load = (name: string): Snapshot | undefined => {
    try {
      return JSON.parse(readFileSync(join(dir, name), "utf8")) as Snapshot;
    } catch {
      return undefined;
    }
  };
  for (const name of readdirSync(dir)) {
    const m = /^iteration-(\d+)\.json$/.exec(name);
    const snapshot = m ? load(name) : undefined;
    if (m && snapshot) result.iterations.push({ iteration: Number(m[1]), snapshot });
  }
  result.iterations.sort((a, b) => a.iteration - b.iteration);
  const start = load("start.json");
  const end = load("end.json");
  if (start) result.start = start;
  if (end) result.end = end;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Comparing two snapshots.

export type ChangeKind = "created" | "changed" | "deleted";

export interface FileChange {
  path: string;
  kind: ChangeKind;
  before?: SnapshotEntry;
  after?: SnapshotEntry;
}

export function compareSnapshots(before: Snapshot, after: Snapshot): FileChange[] {
  const changes: FileChange[] = [];
  const paths = new Set([...Object.keys(before.files), ...Object.keys(after.files)]);
  for (const path of [...paths].sort()) {
    const a = before.files[path];
    const b = after.files[path];
    if (a && !b) changes.push({ path, kind: "deleted", before: a });
    else if (!a && b) changes.push({ path, kind: "created", after: b });
    else if (a && b && !sameEntry(a, b)) changes.push({ path, kind: "changed", before: a, after: b });
  }
  return changes;
}

function sameEntry(a: SnapshotEntry, b: SnapshotEntry): boolean {
  if (a.kind !== b.kind || a.size !== b.size) return false;
  if (a.kind === "link") return a.target === b.target;
  if (a.sha256 && b.sha256) return a.sha256 === b.sha256;
  // Not read on one side (a large file): size and mtime say. Not ctime: lending the folder to the
  // sandbox user (a root-run scifi) changes every entry's ctime.
  return a.mtimeMs === b.mtimeMs;
}

export interface DiffLine {
  op: " " | "+" | "-";
  text: string;
  /** Line numbers in the old and new file (1-based). */
  a?: number;
  b?: number;
}

/** Most lines a diff compares; larger files are shown without a diff. */
export const MAX_DIFF_LINES = 20_000;

/**
 * Line diff (Myers, O((N+M)D)) of two texts; undefined when too large or too different to compute
 * within a bound.
 */
export function diffLines(before: string, after: string, maxEdits = 4000): DiffLine[] | undefined {
  const a = splitLines(before);
  const b = splitLines(after);
  if (a.length > MAX_DIFF_LINES || b.length > MAX_DIFF_LINES) return undefined;
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x: number;
      if (k === -d || (k !== d && (v[offset + k - 1] as number) < (v[offset + k + 1] as number)))
        x = v[offset + k + 1] as number;
      else x = (v[offset + k - 1] as number) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    if (found >= 0) break;
  }
  if (found < 0) return undefined;
  const lines: DiffLine[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d] as Int32Array;
    const k = x - y;
    const prevK =
      k === -d || (k !== d && (vd[offset + k - 1] as number) < (vd[offset + k + 1] as number))
        ? k + 1
        : k - 1;
    const prevX = vd[offset + prevK] as number;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      lines.push({ op: " ", text: a[x] as string, a: x + 1, b: y + 1 });
    }
    if (x === prevX) {
      y--;
      lines.push({ op: "+", text: b[y] as string, b: y + 1 });
    } else {
      x--;
      lines.push({ op: "-", text: a[x] as string, a: x + 1 });
    }
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    lines.push({ op: " ", text: a[x] as string, a: x + 1, b: y + 1 });
  }
  return lines.reverse();
}

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

export interface Hunk {
  lines: DiffLine[];
}

/** Changed lines with `context` lines around them, grouped in hunks; at most `maxLines` lines shown. */
export function hunks(lines: DiffLine[], context = 3, maxLines = 400): { hunks: Hunk[]; cut: number } {
  const keep = new Array<boolean>(lines.length).fill(false);
  lines.forEach((line, i) => {
    if (line.op === " ") return;
    for (let j = Math.max(0, i - context); j <= Math.min(lines.length - 1, i + context); j++) keep[j] = true;
  });
  const result: Hunk[] = [];
  let current: DiffLine[] | undefined;
  let shown = 0;
  let cut = 0;
  lines.forEach((line, i) => {
    if (!keep[i]) {
      current = undefined;
      return;
    }
    if (shown >= maxLines) {
      cut++;
      return;
    }
    if (!current) {
      current = [];
      result.push({ lines: current });
    }
    current.push(line);
    shown++;
  });
  return { hunks: result, cut };
}
