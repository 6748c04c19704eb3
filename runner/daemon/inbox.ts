// The inbox: which paths are tasks, their content hash, validation with full diagnostics, and a
// watcher that reports a SAM only once it has stopped changing (size and mtime stable for the
// settle period), so a file still being written is never picked up half-written.
import { existsSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { basename, join, relative, sep } from "node:path";
import { type FSWatcher, watch } from "chokidar";
import { formatDiagnostic } from "../sam/diagnostics.ts";
import { SamRefused } from "../sam/gate.ts";
import type { SamMetadata } from "../sam/types.ts";
import { sha256 } from "../sha256.ts";
import { gateSamFile } from "../skills/sam-gate.ts";

/** A folder task holds its SAM under this name. */
export const FOLDER_SAM = "task.md";

export interface InboxEntry {
  key: string;
  kind: "file" | "folder";
  source: string;
}

/** Names never taken as tasks: dotfiles and editor or in-progress files (write, then rename). */
export function ignoredName(name: string): boolean {
  return name.startsWith(".") || name.endsWith(".tmp") || name.endsWith("~") || name.endsWith(".swp");
}

/** The task a path in the inbox belongs to: `<inbox>/x.md` or `<inbox>/x/task.md`; else undefined. */
export function entryOf(inbox: string, path: string): InboxEntry | undefined {
  const parts = relative(inbox, path).split(sep);
  if (parts.some((p) => p === ".." || p === "" || ignoredName(p))) return undefined;
  if (parts.length === 1 && parts[0]?.endsWith(".md")) return { key: parts[0], kind: "file", source: path };
  if (parts.length === 2 && parts[1] === FOLDER_SAM && parts[0])
    return { key: parts[0], kind: "folder", source: path };
  return undefined;
}

/** Every task in the inbox now (the rescan; the watcher covers what comes later). */
export function scanInbox(inbox: string): InboxEntry[] {
  const entries: InboxEntry[] = [];
  for (const name of readdirSync(inbox)) {
    if (ignoredName(name)) continue;
    const path = join(inbox, name);
    const entry = entryOf(inbox, statSync(path).isDirectory() ? join(path, FOLDER_SAM) : path);
    if (entry && existsSync(entry.source)) entries.push(entry);
  }
  return entries;
}

/** The hash of a SAM file as the daemon records it (the bytes on disk). */
export function sha256File(file: string): string {
  return sha256(readFileSync(file));
}

export type Validation = { ok: true; metadata: SamMetadata } | { ok: false; report: string };

/**
 * The SAM through the one gate (runner/sam/gate.ts: what `scifi validate` reports, skill names
 * against `home`'s library included); a refused one gets every diagnostic, one a line.
 */
export function validateSam(file: string, home: string): Validation {
  try {
    return { ok: true, metadata: gateSamFile(file, home).metadata };
  } catch (error) {
    if (!(error instanceof SamRefused)) throw error;
    const lines = error.diagnostics.map(formatDiagnostic);
    return { ok: false, report: lines.join("\n") || `${file}: not a valid SAM` };
  }
}

/** `<inbox>/x.md` -> `<inbox>/x.rejected.txt`; `<inbox>/x/task.md` -> `<inbox>/x/task.rejected.txt`. */
export function rejectedFile(source: string): string {
  return source.replace(/\.md$/, ".rejected.txt");
}

export function writeRejection(source: string, report: string): void {
  const text = [
    `scifi daemon: ${basename(source)} was rejected (${new Date().toISOString()}).`,
    "Fix the SAM and save it again (it is re-validated), or run 'scifi validate' on it.",
    "",
    report,
    "",
  ].join("\n");
  writeFileSync(rejectedFile(source), text);
}

export function clearRejection(source: string): void {
  const file = rejectedFile(source);
  if (existsSync(file)) unlinkSync(file);
}

export interface InboxWatcher {
  close(): Promise<void>;
}

export interface WatchOptions {
  /** A file must keep the same size and mtime this long before it counts (ms). */
  settleMs: number;
  onTask(entry: InboxEntry): void;
  onRemoved(entry: InboxEntry): void;
  onError(error: Error): void;
}

/** Watches the inbox (and the first level of task folders); the initial scan is the start rescan. */
export function watchInbox(inbox: string, options: WatchOptions): InboxWatcher {
  const watcher: FSWatcher = watch(inbox, {
    depth: 1,
    ignoreInitial: false,
    awaitWriteFinish: { stabilityThreshold: options.settleMs, pollInterval: Math.min(100, options.settleMs) },
    ignored: (path) => path !== inbox && ignoredName(basename(path)),
  });
  const report = (path: string) => {
    const entry = entryOf(inbox, path);
    if (entry) options.onTask(entry);
  };
  watcher.on("add", report);
  watcher.on("change", report);
  watcher.on("unlink", (path) => {
    const entry = entryOf(inbox, path);
    if (entry) options.onRemoved(entry);
  });
  watcher.on("error", (error) => options.onError(error instanceof Error ? error : new Error(String(error))));
  return { close: () => watcher.close() };
}
