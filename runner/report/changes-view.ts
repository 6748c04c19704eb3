// The report's view of a run's task-folder snapshots (runner/report/changes.ts): what changed over
// the whole run and in each iteration's work pass, with capped line diffs, inline images (from the
// end snapshot only) and size and hash for everything else.
import {
  compareSnapshots,
  type DiffLine,
  diffLines,
  type FileChange,
  type Hunk,
  hunks,
  type Snapshot,
  type StoredSnapshots,
} from "./changes.ts";
import { highlightLines, type Language, languageOf, type Segment } from "./highlight.ts";

/** Diff lines shown per file; the rest is counted, not shown. */
export const MAX_SHOWN_DIFF_LINES = 400;
/**
 * Source characters syntax-highlighted for one report, all diffs together; past it diffs are plain.
 * Each file is highlighted only up to its last shown line.
 */
export const MAX_HIGHLIGHT_CHARS = 2 * 1024 * 1024;

/** A shown diff line; `hl`: its text highlighted (the diff's language), absent when plain. */
export interface ShownLine extends DiffLine {
  hl?: Segment[];
}

export interface FileChangeView {
  path: string;
  kind: FileChange["kind"];
  /** "file", "link", "other" (a FIFO, socket or device: never read). */
  type: string;
  sizeBefore?: number;
  sizeAfter?: number;
  shaBefore?: string;
  shaAfter?: string;
  linkTarget?: string;
  diff?: {
    hunks: { lines: ShownLine[] }[];
    cut: number;
    added: number;
    removed: number;
    /** The language the lines are highlighted as (from the file name), when they are. */
    lang?: Language;
  };
  /** The produced image, inline (end snapshot only). */
  image?: { mime: string; base64: string };
  /** A produced PDF's first page (PNG rendered in a sandbox), inline (end snapshot only). */
  pdfPage?: { mime: string; base64: string };
  /** Why a produced PDF's first page is not shown (end snapshot only). */
  pdfNote?: string;
  /** Why no diff is shown (binary, too large, not kept). */
  note?: string;
}

export interface ChangeSetView {
  label: string;
  files: FileChangeView[];
  partial?: string;
}

export interface ChangesView {
  /** Why no changes can be shown (no snapshots: an older run, or one that never started). */
  missing?: string;
  overall?: ChangeSetView;
  iterations: ChangeSetView[];
}

export function changesView(stored: StoredSnapshots | undefined): ChangesView {
  if (!stored?.start) {
    return { missing: "this run has no snapshot of its task folder at its start", iterations: [] };
  }
  const start = stored.start;
  const budget = { chars: MAX_HIGHLIGHT_CHARS };
  const last = stored.end ?? stored.iterations.at(-1)?.snapshot;
  const iterations: ChangeSetView[] = [];
  let before = start;
  for (const { iteration, snapshot } of stored.iterations) {
    iterations.push(changeSet(`iteration ${iteration} (its work pass)`, before, snapshot, false, budget));
    before = snapshot;
  }
  if (!last) return { missing: "the run has no snapshot after its start (it was stopped)", iterations };
  const overall = changeSet(
    stored.end ? "the whole run (start to end)" : "start to the last work pass (no end snapshot)",
    start,
    last,
    true,
    budget,
  );
  return { overall, iterations };
}

/** What is left of the report's highlighting budget. */
interface Budget {
  chars: number;
}

function changeSet(
  label: string,
  before: Snapshot,
  after: Snapshot,
  images: boolean,
  budget: Budget,
): ChangeSetView {
  const partial = [before.partial, after.partial].filter(Boolean).join("; ");
  return {
    label,
    files: compareSnapshots(before, after).map((change) => fileView(change, images, budget)),
    ...(partial ? { partial } : {}),
  };
}

function fileView(change: FileChange, images: boolean, budget: Budget): FileChangeView {
  const { before, after } = change;
  const view: FileChangeView = {
    path: change.path,
    kind: change.kind,
    type: (after ?? before)?.kind ?? "file",
  };
  if (before) {
    view.sizeBefore = before.size;
    if (before.sha256) view.shaBefore = before.sha256;
  }
  if (after) {
    view.sizeAfter = after.size;
    if (after.sha256) view.shaAfter = after.sha256;
    if (after.target !== undefined) view.linkTarget = after.target;
  }
  if (images && after?.image) view.image = after.image;
  if (images && after?.pdfPage) view.pdfPage = after.pdfPage;
  if (images && after?.pdfNote) view.pdfNote = after.pdfNote;
  if (view.type !== "file") return view;
  const oldText = change.kind === "created" ? "" : before?.text;
  const newText = change.kind === "deleted" ? "" : after?.text;
  if (oldText === undefined || newText === undefined) {
    if (!view.image && !view.pdfPage) {
      view.note =
        (after ?? before)?.image !== undefined ||
        (after?.sha256 && after.text === undefined && after.size > 0)
          ? "binary or large file: size and sha256 only"
          : "contents not kept: size and sha256 only";
    }
    return view;
  }
  const lines = diffLines(oldText, newText);
  if (!lines) {
    view.note = "too large or too different to diff";
    return view;
  }
  const shown = hunks(lines, 3, MAX_SHOWN_DIFF_LINES);
  view.diff = { ...shown, added: count(lines, "+"), removed: count(lines, "-") };
  const lang = languageOf(change.path);
  if (lang) {
    const highlighted = highlightShown(shown.hunks, oldText, newText, lang, budget);
    if (highlighted) view.diff = { ...view.diff, hunks: highlighted, lang };
  }
  return view;
}

/**
 * The shown hunks with each line highlighted: the old and the new text are highlighted whole (a
 * string or comment may span lines), each only up to its last shown line, within the budget.
 */
function highlightShown(
  shown: Hunk[],
  oldText: string,
  newText: string,
  lang: Language,
  budget: Budget,
): { lines: ShownLine[] }[] | undefined {
  let lastOld = 0;
  let lastNew = 0;
  for (const hunk of shown)
    for (const line of hunk.lines) {
      if (line.op === "-") lastOld = Math.max(lastOld, line.a ?? 0);
      else lastNew = Math.max(lastNew, line.b ?? 0);
    }
  const oldPart = headLines(oldText, lastOld);
  const newPart = headLines(newText, lastNew);
  if (oldPart.length + newPart.length > budget.chars) return undefined;
  budget.chars -= oldPart.length + newPart.length;
  const oldLines = lastOld > 0 ? highlightLines(oldPart, lang) : [];
  const newLines = lastNew > 0 ? highlightLines(newPart, lang) : [];
  if (!oldLines || !newLines) return undefined;
  return shown.map((hunk) => ({
    lines: hunk.lines.map((line) => {
      const hl = line.op === "-" ? oldLines[(line.a ?? 0) - 1] : newLines[(line.b ?? 0) - 1];
      return hl ? { ...line, hl } : line;
    }),
  }));
}

/** The first `n` lines of `text` (with their newlines). */
function headLines(text: string, n: number): string {
  let at = 0;
  for (let i = 0; i < n; i++) {
    const next = text.indexOf("\n", at);
    if (next < 0) return text;
    at = next + 1;
  }
  return text.slice(0, at);
}

function count(lines: DiffLine[], op: DiffLine["op"]): number {
  return lines.filter((line) => line.op === op).length;
}
