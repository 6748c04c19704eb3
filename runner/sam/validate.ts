// The work behind `scifi validate`: expand folders, parse each SAM (sub-SAM files are validated as
// part of their parent, not on their own), print diagnostics or canonical JSON, pick the exit code.

import { statSync } from "node:fs";
import { resolve } from "node:path";
import { checkSummary } from "./check-summary.ts";
import { formatDiagnostic } from "./diagnostics.ts";
import { findSamFiles } from "./discover.ts";
import { checkSam, type ExtraChecks } from "./gate.ts";
import { canonicalJson } from "./json.ts";
import type { ParseResult } from "./types.ts";

/** `valid`: every SAM is valid; `invalid`: at least one is not; `usage`: a path is missing or holds no SAM. */
export type ValidateOutcome = "valid" | "invalid" | "usage";

export interface ValidateOptions {
  json: boolean;
  out: { write(text: string): unknown };
  err: { write(text: string): unknown };
  /** Checks beyond the file itself (e.g. skill names against the skills library); errors make the SAM invalid. */
  extraChecks?: ExtraChecks | undefined;
}

export function validatePaths(paths: string[], options: ValidateOptions): ValidateOutcome {
  const files = expandPaths(paths, options.err);
  if (files === undefined) return "usage";
  // checkSam is the gate every entry point runs (gate.ts): a rule belongs there or in the parser,
  // never here alone, or `scifi run` would accept what this refuses.
  const results = files.map((file) => ({
    file,
    result: checkSam(file, { extraChecks: options.extraChecks }),
  }));
  const included = new Set(
    results.flatMap(({ result }) => (result.ok ? result.sam.files.slice(1).map((f) => f.file) : [])),
  );
  // A folder scan finds sub-SAM files too; they were validated inside their parent.
  const reported = results.filter(({ file }) => !included.has(resolve(file)));
  if (options.json) options.out.write(`${canonicalJson(reported.map(toJsonEntry))}\n`);
  else for (const entry of reported) printHuman(entry.file, entry.result, options);
  return reported.every(({ result }) => result.ok) ? "valid" : "invalid";
}

/** Files named on the command line, plus SAM files found under named folders, without repeats. */
function expandPaths(paths: string[], err: ValidateOptions["err"]): string[] | undefined {
  const files: string[] = [];
  for (const path of paths) {
    let isDir: boolean;
    try {
      isDir = statSync(path).isDirectory();
    } catch {
      err.write(`scifi validate: no such file or folder: ${path}\n`);
      return undefined;
    }
    if (!isDir) {
      files.push(path);
      continue;
    }
    const found = findSamFiles(path);
    if (found.length === 0) {
      err.write(
        `scifi validate: no SAM files under ${path} (looked for task.md and *.md starting with front matter)\n`,
      );
      return undefined;
    }
    files.push(...found);
  }
  const seen = new Set<string>();
  return files.filter((f) => !seen.has(resolve(f)) && seen.add(resolve(f)));
}

function printHuman(file: string, result: ParseResult, options: ValidateOptions): void {
  for (const d of result.diagnostics) options.out.write(`${formatDiagnostic(d)}\n`);
  if (result.ok) {
    const { sam } = result;
    const nodes = countNodes(sam.root);
    const checks = countChecks(sam.root);
    const hidden = sam.metadata.hiddenAssets ?? [];
    const hiddenText = hidden.length ? `; hidden from the agents: ${hidden.join(", ")}` : "";
    // Items no check covers are judged by the review alone: said on the same line (`scifi plan` and
    // --json give their text).
    const reviewOnly = checkSummary(sam.root).reviewOnly.map((i) => i.id);
    const reviewText = reviewOnly.length ? `; judged by the review alone: ${reviewOnly.join(", ")}` : "";
    options.out.write(
      `${file}: OK (${sam.metadata.name}: ${nodes} SAM${nodes === 1 ? "" : "s"}, ${checks} check${checks === 1 ? "" : "s"}${hiddenText}${reviewText})\n`,
    );
  }
}

function toJsonEntry({ file, result }: { file: string; result: ParseResult }): unknown {
  return {
    file: resolve(file),
    ok: result.ok,
    diagnostics: result.diagnostics,
    sam: result.ok ? result.sam : undefined,
    ...(result.ok ? { reviewOnly: checkSummary(result.sam.root).reviewOnly } : {}),
  };
}

type Tree = { children: Tree[]; items: { checks: unknown[] }[] };
const countNodes = (node: Tree): number => 1 + node.children.reduce((n, c) => n + countNodes(c), 0);
const countChecks = (node: Tree): number =>
  node.items.reduce((n, i) => n + i.checks.length, 0) + node.children.reduce((n, c) => n + countChecks(c), 0);
