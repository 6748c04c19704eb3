// Memory and skill texts in the report: each text the tape says entered a prompt, found again by its
// hash (memory files are append-only: a prefix ending at an entry boundary, or a bounded view built
// again), and the memory entries the run wrote.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { InjectedRecord } from "../audit/types.ts";
import { parseEntries } from "../memory/entries.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { readMemoryView } from "../memory/view.ts";
import { homePaths, runFiles } from "../paths.ts";
import { sha256 } from "../sha256.ts";
import { BUILTIN_SKILLS_DIR } from "../skills/library.ts";
import { type RunInputs, sharedMemoryFiles } from "./load.ts";

export interface InjectedView {
  record: InjectedRecord;
  /** Anchor id in the page. */
  anchor: string;
  /** The exact text that was hashed, when it can still be found; otherwise why not. */
  text?: string;
  missing?: string;
  /** A group or global memory view: the ids of the entries it drew on (history `memory_view`). */
  entries?: string[];
}

export interface MemoryWrittenView {
  file: string;
  scope: string;
  id: string;
  title: string;
  meta: string;
  body: string;
}

export function injectedViews(records: InjectedRecord[], inputs: RunInputs): InjectedView[] {
  return records.map((record) => {
    const anchor = `injected-${record.seq}`;
    const view = inputs.history.find(
      (e): e is Extract<HistoryRecord, { type: "memory_view" }> =>
        e.type === "memory_view" && e.ref === record.ref && e.sha256 === record.sha256,
    );
    if (view) return { record, anchor, ...memoryViewText(record, view, inputs), entries: view.entries };
    const found = injectedText(record, inputs);
    return { record, anchor, ...found };
  });
}

/**
 * A group or global memory view, built again from its file as it was then (the file is append-only:
 * entries written before the view was recorded) with the recorded budget. The hash decides.
 */
function memoryViewText(
  record: InjectedRecord,
  event: Extract<HistoryRecord, { type: "memory_view" }>,
  inputs: RunInputs,
): { text?: string; missing?: string } {
  const [file] = candidateFiles(record.ref, inputs);
  if (!file || !existsSync(file)) return { missing: `no file is known for '${record.ref}'` };
  const options = { budgetTokens: event.budget, before: event.before ?? event.time };
  const { text } = readMemoryView(file, options);
  if (sha256(text) === record.sha256) return { text };
  // A run from before a38b saw each line's source note after the suggestion.
  const old = readMemoryView(file, { ...options, noteAfter: true }).text;
  if (sha256(old) === record.sha256) return { text: old };
  return {
    missing: `the view built again from ${file} does not match sha256 ${record.sha256.slice(0, 12)}…: the file was changed since the run; entries: ${event.entries.join(", ")}`,
  };
}

/**
 * The text that was hashed into the prompt. Memory files are append-only, so the injected text is a
 * prefix of today's file ending at an entry boundary; a skill is its whole file. The hash decides.
 */
function injectedText(record: InjectedRecord, inputs: RunInputs): { text?: string; missing?: string } {
  const candidates = candidateFiles(record.ref, inputs);
  if (candidates.length === 0) return { missing: `no file is known for '${record.ref}'` };
  for (const file of candidates) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, "utf8");
    for (const prefix of entryPrefixes(text)) if (sha256(prefix) === record.sha256) return { text: prefix };
  }
  return {
    missing: `no text in ${candidates.join(" or ")} matches sha256 ${record.sha256.slice(0, 12)}…: the file was changed or removed since the run`,
  };
}

function candidateFiles(ref: string, inputs: RunInputs): string[] {
  const paths = homePaths(inputs.home);
  const [kind, scope, ...rest] = ref.split(":");
  const name = rest.join(":");
  if (kind === "skill" && scope)
    return [join(paths.skills, `${scope}.md`), join(BUILTIN_SKILLS_DIR, `${scope}.md`)];
  if (kind !== "memory") return [];
  if (scope === "task") return [runFiles(inputs.runDir).memory];
  if (scope === "group" && name) return [paths.groupMemory(name)];
  if (scope === "global") return [paths.globalMemory];
  return [];
}

/** The text cut before each entry mark, and the whole text. */
function entryPrefixes(text: string): string[] {
  const cuts = [...text.matchAll(/^<!-- scifi-entry /gm)].map((m) => m.index);
  return [...cuts.map((cut) => text.slice(0, cut)), text];
}

export function memoryWritten(inputs: RunInputs, runId: string): MemoryWrittenView[] {
  const task = parseEntries(inputs.taskMemory).map((e) => ({
    file: runFiles(inputs.runDir).memory,
    scope: "task",
    ...e,
  }));
  const shared = sharedMemoryFiles(inputs.home).flatMap((file) =>
    parseEntries(readFileSync(file, "utf8"))
      .filter((e) => e.meta.includes(`run ${runId} `) || e.meta.endsWith(`run ${runId}`))
      .map((e) => ({ file, scope: scopeOf(file, inputs.home), ...e })),
  );
  return [...task, ...shared];
}

function scopeOf(file: string, home: string): string {
  if (file === homePaths(home).globalProposed) return "global (proposed: 'scifi memory accept' decides)";
  return file === homePaths(home).globalMemory
    ? "global"
    : `group ${file.replace(/^.*\//, "").replace(/\.md$/, "")}`;
}
