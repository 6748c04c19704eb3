// What a person sees of each check before deciding (the `finish` approval request, the terminal
// prompt that renders it) and in the report: its stage, exit code, duration, sandbox and the tail of
// its output, not only PASS. A compare stage's output and exit code are withheld from the agents
// but kept for people in `runs/<id>/check-output/`; they are read back from there. The text built
// here is agent text: whoever prints it escapes it (approval/render.ts, report/escape.ts).
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import type { CheckOutcome } from "./state.ts";

/** Output lines shown per check where a person decides (the whole output is in the report). */
export const EVIDENCE_TAIL_LINES = 5;
/** Bytes of a held output read back (the runner wrote it, capped at 64 KiB of output). */
const MAX_HELD_BYTES = 80 * 1024;

/** A check as a person should see it: the real exit code and output, also of a compare stage. */
export interface CheckEvidence {
  id: string;
  passed: boolean;
  stage: "run" | "compare";
  exitCode: number;
  timedOut: boolean;
  durationMs?: number;
  sandbox?: string;
  output: string;
}

/** A held output's path is the runner's own form (`check-output/<name>.txt`), never anything else. */
const HELD_PATH = /^check-output\/[A-Za-z0-9._-]+\.txt$/;

/**
 * A compare stage's withheld exit code and output, as the runner wrote them (`exit N[ (timed
 * out)]` then the output); undefined when the path is not the runner's form or the file is gone.
 */
export function readHeldOutput(
  runDir: string,
  heldOutput: string,
): { exitCode: number; timedOut: boolean; output: string } | undefined {
  if (!HELD_PATH.test(heldOutput)) return undefined;
  const text = readSmallFile(join(runDir, heldOutput));
  if (text === undefined) return undefined;
  const newline = text.indexOf("\n");
  const head = /^exit (-?\d+)( \(timed out\))?$/.exec(newline < 0 ? text : text.slice(0, newline));
  if (!head) return undefined;
  return {
    exitCode: Number(head[1]),
    timedOut: head[2] !== undefined,
    output: newline < 0 ? "" : text.slice(newline + 1),
  };
}

/** The evidence of one recorded check; a compare stage's from its held output when it is there. */
export function checkEvidence(runDir: string, outcome: CheckOutcome): CheckEvidence {
  const held = outcome.heldOutput ? readHeldOutput(runDir, outcome.heldOutput) : undefined;
  return {
    id: outcome.id,
    passed: outcome.passed,
    stage: outcome.heldOutput ? "compare" : "run",
    exitCode: held?.exitCode ?? outcome.exitCode,
    timedOut: held?.timedOut ?? outcome.timedOut,
    ...(outcome.durationMs !== undefined ? { durationMs: outcome.durationMs } : {}),
    ...(outcome.sandbox ? { sandbox: outcome.sandbox } : {}),
    output: held?.output ?? outcome.output,
  };
}

/** `3.2 s`, `450 ms`, `2 min 5 s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** One line: `PASS root/check-1 (run stage): exit 0, 3.2 s, sandbox NAME`. */
export function evidenceHeader(e: CheckEvidence): string {
  const facts = [
    e.timedOut ? `timed out (exit ${e.exitCode})` : `exit ${e.exitCode}`,
    ...(e.durationMs !== undefined ? [formatDuration(e.durationMs)] : []),
    ...(e.sandbox ? [`sandbox ${e.sandbox}`] : []),
  ];
  return `${e.passed ? "PASS" : "FAIL"} ${e.id} (${e.stage} stage): ${facts.join(", ")}`;
}

/**
 * The header, then the last lines of the output, each marked `    > ` so no output line passes for
 * a header; a cut says how many lines were left out.
 */
export function evidenceLines(e: CheckEvidence, tailLines = EVIDENCE_TAIL_LINES): string[] {
  const lines = e.output.replace(/\n+$/, "").split("\n");
  const shown = e.output.trim() === "" ? [] : lines.slice(-tailLines);
  const cut = lines.length - shown.length;
  return [
    evidenceHeader(e),
    ...(cut > 0 && shown.length > 0 ? [`    > [... ${cut} earlier line(s) of output not shown ...]`] : []),
    ...(shown.length > 0 ? shown.map((l) => `    > ${l}`) : ["    > (no output)"]),
  ];
}

/** At most MAX_HELD_BYTES of a regular file, not following a link; undefined otherwise. */
function readSmallFile(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const buffer = Buffer.alloc(MAX_HELD_BYTES);
    const n = readSync(fd, buffer, 0, MAX_HELD_BYTES, 0);
    return buffer.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}
