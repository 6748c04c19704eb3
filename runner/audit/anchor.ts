// Heads of the audit tape recorded outside it: `auditHead` in the run's state.json (written at
// every checkpoint) and `audit` in history events (`iteration_end`, `run_end`). `scifi audit verify`
// checks the tape against every one of them (verify.ts): a tape cut back before a recorded head, or
// re-chained so that the line at a recorded seq hashes differently, no longer verifies, unless
// state.json and the history were rewritten to match as well (which a site audit key then catches).
//
// Read here without the run loop's or the history's modules: the audit module stays a leaf.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditHead, TapeAnchor } from "./types.ts";

export interface Anchors {
  anchors: TapeAnchor[];
  /** Records next to the tape that could not be read (each a `file: why`). */
  problems: string[];
  /** state.json exists next to the tape (a run folder), anchored or not. */
  runFolder: boolean;
}

/** The heads recorded in `dir`/state.json and `dir`/history.jsonl (the folder holding the tape). */
export function readAnchors(dir: string): Anchors {
  const anchors: TapeAnchor[] = [];
  const problems: string[] = [];
  const stateFile = join(dir, "state.json");
  const runFolder = existsSync(stateFile);
  if (runFolder) {
    try {
      const state = JSON.parse(readFileSync(stateFile, "utf8")) as { auditHead?: unknown };
      if (state.auditHead !== undefined) {
        if (isHead(state.auditHead)) anchors.push({ ...pick(state.auditHead), source: "state.json" });
        else problems.push("state.json: auditHead is not a {seq, hash} head");
      }
    } catch (error) {
      problems.push(`state.json: ${(error as Error).message}`);
    }
  }
  const historyFile = join(dir, "history.jsonl");
  if (existsSync(historyFile)) {
    const lines = readFileSync(historyFile, "utf8").split("\n");
    for (const [index, line] of lines.entries()) {
      if (line.trim() === "") continue;
      let event: { audit?: unknown };
      try {
        event = JSON.parse(line) as { audit?: unknown };
      } catch (error) {
        problems.push(`history.jsonl:${index + 1}: ${(error as Error).message}`);
        continue;
      }
      if (event.audit === undefined) continue;
      if (isHead(event.audit)) anchors.push({ ...pick(event.audit), source: `history.jsonl:${index + 1}` });
      else problems.push(`history.jsonl:${index + 1}: audit is not a {seq, hash} head`);
    }
  }
  return { anchors, problems, runFolder };
}

function isHead(value: unknown): value is AuditHead {
  const head = value as Partial<AuditHead> | null;
  return (
    typeof head === "object" &&
    head !== null &&
    Number.isInteger(head.seq) &&
    (head.seq as number) >= 0 &&
    typeof head.hash === "string" &&
    /^[0-9a-f]{64}$/.test(head.hash)
  );
}

function pick(head: AuditHead): AuditHead {
  return { seq: head.seq, hash: head.hash };
}
