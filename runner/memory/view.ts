// The injected view of a shared memory file (group or global). The files are append-only and grow
// by one entry a run; what reaches a prompt is a view built from them, never the file itself:
// - each entry's body is split into suggestions (its `- ` bullets; a body without bullets is one);
// - suggestions that are identical or near-identical (the same words in the same order once case,
//   punctuation, spacing and a few filler words like "the" are ignored) are merged into one, with
//   the runs they came from;
// - the merged suggestions are ordered by how many distinct runs gave them (a run that repeats a
//   line 40 times, in one entry or in 40, counts once), then newest first;
// - they are taken in that order while they fit the level's token budget (about 4 characters a
//   token); what does not fit is left out and counted;
// - one run's share is capped: lines only one run gave take at most MAX_RUN_LINES lines and
//   MAX_RUN_SHARE of the budget per run, so one run's many variants cannot push out what other
//   runs found (a line that asks agents to skip verification is still just text, but it cannot
//   outrank what many runs found, nor crowd them out). Past the cap a line is left out and counted.
// `before` (an ISO time) leaves out entries written at or after it, as readMemory does for a replay.
// Pure and linear in the file's size: a 10,000-entry file builds in milliseconds (scripts/bench.ts).
import { existsSync, readFileSync } from "node:fs";

export interface ViewItem {
  /**
   * The suggestion in the wording most of its runs gave (ties: the newest of them), so one run's
   * near-identical rewording ("do not! call report_done") never speaks for what other runs wrote.
   */
  text: string;
  /** How many distinct runs gave it (what it ranks by; the `×N` of its line). */
  count: number;
  /** How many times it was written, repeats within a run included. */
  occurrences: number;
  /** Runs it came from, newest first, each once. */
  runs: string[];
  /** Entry ids it came from, newest first, each once. */
  entries: string[];
  /** ISO time of its newest entry. */
  newest: string;
}

export interface MemoryView {
  /** The text that goes into the prompt ("" when nothing was written or nothing fits). */
  text: string;
  /** The suggestions in the view, in order. */
  items: ViewItem[];
  /** Ids of the entries whose suggestions are in the view, in file order. */
  entries: string[];
  /** Merged suggestions left out for the budget. */
  omitted: number;
  /** Estimated tokens of `text`. */
  tokens: number;
}

export interface ViewOptions {
  /** Most tokens the view's text may take. */
  budgetTokens: number;
  before?: string | undefined;
  /**
   * Write each line's source note after the suggestion, as views did before a38b (the report
   * builds an old run's view again to match its recorded hash); never for a new prompt.
   */
  noteAfter?: boolean;
}

/** Lines a single run may be the only source of, in one view. */
export const MAX_RUN_LINES = 8;
/** Share of the budget the lines a single run is the only source of may take. */
export const MAX_RUN_SHARE = 1 / 3;

/** No rendered line is shorter than this (its `- `, a word and its source note). */
const MIN_LINE_TOKENS = 6;

/** About 4 characters a token: the estimate budgets and the bench use. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/**
 * What separates the words of a key: any run of characters other than letters and digits, and the
 * filler words a near-identical suggestion may add or drop (one expression, one pass).
 */
const SEPARATORS = /(?:[^0-9a-z\u00aa-\uffff]|\b(?:a|an|the|and|or|to|of|in|on|for|is|are|be|it|its)\b)+/g;

/**
 * The key near-identical suggestions share: lower case, every run of characters other than
 * letters and digits and of filler words one space. The view keys every suggestion of the file,
 * so this is its hot loop.
 */
export function suggestionKey(text: string): string {
  return text.toLowerCase().replace(SEPARATORS, " ").trim();
}

/** The view of a memory file (see the top of this file); an absent file gives an empty view. */
export function readMemoryView(file: string, options: ViewOptions): MemoryView {
  return memoryView(existsSync(file) ? readFileSync(file, "utf8") : "", options);
}

export function memoryView(fileText: string, options: ViewOptions): MemoryView {
  const before = options.before === undefined ? undefined : Date.parse(options.before);
  // Keyed by suggestionKey; met in newest-first order, which ranks equals.
  const merged = new Map<
    string,
    ViewItem & { order: number; runSet: Set<string>; wordings: Map<string, Set<string>> }
  >();
  // Keys of texts already met (the same advice is most often written the same way).
  const keys = new Map<string, string>();
  // File order is oldest first; walking it backwards meets the newest wording and runs first.
  const entries = scanEntries(fileText);
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i];
    if (!entry) continue;
    // `time · run <id> · role`
    const meta = entry.meta;
    const cut1 = meta.indexOf(" · ");
    const time = cut1 < 0 ? meta : meta.slice(0, cut1);
    if (before !== undefined && !(Date.parse(time) < before)) continue;
    const cut2 = cut1 < 0 ? -1 : meta.indexOf(" · ", cut1 + 3);
    const run = cut1 < 0 ? "" : meta.slice(cut1 + 3, cut2 < 0 ? undefined : cut2);
    const runId = run.startsWith("run ") ? run.slice(4) : run;
    for (const suggestion of entry.suggestions) {
      let key = keys.get(suggestion);
      if (key === undefined) {
        key = suggestionKey(suggestion);
        keys.set(suggestion, key);
      }
      if (key === "") continue;
      const item = merged.get(key);
      if (!item) {
        const order = merged.size;
        merged.set(key, {
          text: suggestion,
          count: 1,
          occurrences: 1,
          runSet: new Set([runId]),
          runs: [runId],
          entries: [entry.id],
          newest: time,
          order,
          wordings: new Map([[suggestion, new Set([runId])]]),
        });
        continue;
      }
      item.occurrences++;
      const wording = item.wordings.get(suggestion);
      if (wording) wording.add(runId);
      else item.wordings.set(suggestion, new Set([runId]));
      // An entry's suggestions are met one after the other: comparing with the last one is enough
      // to list each entry once. Runs may interleave (parallel runs append in turn): a set.
      if (item.entries.at(-1) !== entry.id) item.entries.push(entry.id);
      if (!item.runSet.has(runId)) {
        item.runSet.add(runId);
        item.runs.push(runId);
        item.count++;
      }
    }
  }
  // Most confirmed first; among equals, newest first (the order they were met in).
  // Bucketed by count (each bucket is already newest first): linear, no comparison sort.
  const buckets = new Map<number, (ViewItem & { order: number; runSet: Set<string> })[]>();
  for (const item of merged.values()) {
    if (item.wordings.size > 1) {
      // Met newest first: on a tie the newest wording stays (advice is refined over runs).
      let most = 0;
      for (const [text, runs] of item.wordings) {
        if (runs.size > most) {
          most = runs.size;
          item.text = text;
        }
      }
    }
    const bucket = buckets.get(item.count);
    if (bucket) bucket.push(item);
    else buckets.set(item.count, [item]);
  }
  const ranked = [...buckets.keys()].sort((a, b) => b - a).flatMap((count) => buckets.get(count) ?? []);
  const items: ViewItem[] = [];
  const lines: string[] = [];
  let tokens = 0;
  // Per run: lines and tokens of the lines that run alone gave.
  const alone = new Map<string, { lines: number; tokens: number }>();
  const runShare = options.budgetTokens * MAX_RUN_SHARE;
  for (const item of ranked) {
    // A line takes at least a few tokens: once fewer are left, nothing more can fit.
    if (options.budgetTokens - tokens < MIN_LINE_TOKENS) break;
    const line = renderItem(item, options.noteAfter === true);
    const cost = estimateTokens(`${line}\n`);
    if (tokens + cost > options.budgetTokens) continue;
    const only = item.count === 1 ? (item.runs[0] ?? "") : undefined;
    if (only !== undefined) {
      const used = alone.get(only) ?? { lines: 0, tokens: 0 };
      if (used.lines >= MAX_RUN_LINES || used.tokens + cost > runShare) continue;
      alone.set(only, { lines: used.lines + 1, tokens: used.tokens + cost });
    }
    tokens += cost;
    lines.push(line);
    const { order: _, runSet: __, ...shown } = item;
    items.push(shown);
  }
  const used = new Set(items.flatMap((item) => item.entries));
  const ids = new Set<string>();
  for (const entry of entries) if (used.has(entry.id)) ids.add(entry.id);
  return {
    text: lines.length > 0 ? `${lines.join("\n")}\n` : "",
    items,
    entries: [...ids],
    omitted: ranked.length - items.length,
    tokens,
  };
}

/**
 * One line: how many runs gave it (×N) and which (at most 3 named), then the suggestion. The note
 * is the runner's word and comes first: a suggestion may end in a note of its own (`(×14, runs
 * ...)`), which after the runner's reads as part of the suggestion, not as its count.
 */
function renderItem(item: ViewItem, noteAfter: boolean): string {
  const runs =
    item.runs.slice(0, 3).join(", ") + (item.runs.length > 3 ? `, +${item.runs.length - 3} more` : "");
  const source = item.count > 1 ? `×${item.count}, runs ${runs}` : `run ${runs}`;
  return noteAfter ? `- ${oneLine(item.text)} (${source})` : `- (${source}): ${oneLine(item.text)}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/**
 * The entries of a memory file, as parseEntries reads them (the same mark lines start an entry:
 * the runner's own, whole), in one pass over its lines, each body already split into suggestions:
 * its top-level `- ` items, or the whole body as one when it has none.
 */
function scanEntries(text: string): { id: string; meta: string; suggestions: string[] }[] {
  const entries: { id: string; meta: string; suggestions: string[] }[] = [];
  const lines = text.split("\n");
  let i = 0;
  while (i < lines.length) {
    const id = markId(lines[i] ?? "");
    if (id === undefined) {
      i++;
      continue;
    }
    const meta = (lines[i + 2] ?? "").replace(/^_|_$/g, "");
    const first = i + 4;
    for (i = first; i < lines.length && markId(lines[i] ?? "") === undefined; i++);
    entries.push({ id, meta, suggestions: suggestionsOf(lines, first, i) });
  }
  return entries;
}

const MARK_HEAD = "<!-- scifi-entry ";

function markId(line: string): string | undefined {
  if (!line.startsWith(MARK_HEAD) || !line.endsWith(" -->")) return undefined;
  const id = line.slice(MARK_HEAD.length, -4);
  return id !== "" && !/\s/.test(id) ? id : undefined;
}

/** The suggestions of an entry body: its top-level `- ` items, or the whole body when it has none. */
function suggestionsOf(lines: readonly string[], from: number, to: number): string[] {
  const items: string[] = [];
  let current: string | undefined;
  for (let n = from; n < to; n++) {
    const line = lines[n] ?? "";
    if (line.startsWith("- ") || line.startsWith("* ")) {
      if (current !== undefined) items.push(current);
      current = line.slice(2);
    } else if (current !== undefined && line.trim() !== "") {
      current += ` ${line.trim()}`;
    } else if (current === undefined && line.trim() !== "") {
      return [oneLine(lines.slice(from, to).join(" "))];
    }
  }
  if (current !== undefined) items.push(current);
  return items.filter((s) => s.trim() !== "");
}
