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

/** Diff lines shown per file; the rest is counted, not shown. */
export const MAX_SHOWN_DIFF_LINES = 400;

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
  diff?: { hunks: Hunk[]; cut: number; added: number; removed: number };
  /** The produced image, inline (end snapshot only). */
  image?: { mime: string; base64: string };
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
  const last = stored.end ?? stored.iterations.at(-1)?.snapshot;
  const iterations: ChangeSetView[] = [];
  let before = start;
  for (const { iteration, snapshot } of stored.iterations) {
    iterations.push(changeSet(`iteration ${iteration} (its work pass)`, before, snapshot, false));
    before = snapshot;
  }
  if (!last) return { missing: "the run has no snapshot after its start (it was stopped)", iterations };
  const overall = changeSet(
    stored.end ? "the whole run (start to end)" : "start to the last work pass (no end snapshot)",
    start,
    last,
    true,
  );
  return { overall, iterations };
}

function changeSet(label: string, before: Snapshot, after: Snapshot, images: boolean): ChangeSetView {
  const partial = [before.partial, after.partial].filter(Boolean).join("; ");
  return {
    label,
    files: compareSnapshots(before, after).map((change) => fileView(change, images)),
    ...(partial ? { partial } : {}),
  };
}

function fileView(change: FileChange, images: boolean): FileChangeView {
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
  if (view.type !== "file") return view;
  const oldText = change.kind === "created" ? "" : before?.text;
  const newText = change.kind === "deleted" ? "" : after?.text;
  if (oldText === undefined || newText === undefined) {
    if (!view.image) {
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
  return view;
}

function count(lines: DiffLine[], op: DiffLine["op"]): number {
  return lines.filter((line) => line.op === op).length;
}
