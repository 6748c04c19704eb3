// The one gate every way a SAM enters goes through: `scifi validate`, `scifi run` (and `--resume`,
// on the runner's pristine copy), `scifi eval` (every variant), the daemon's inbox, `scifi submit`,
// `scifi import`'s output and `make-task`'s draft. What it reports for a file is exactly what
// `scifi validate` reports (the parse with its on-disk checks, the caller's extra checks such as
// skill names, the allow_commands warnings), so a rule added here or in the parser reaches every
// entry point without any of them knowing it. An error refuses the SAM before anything is created.
import { existsSync } from "node:fs";
import { dirname } from "node:path";
import { withAllowlistWarnings } from "./allowlist-warnings.ts";
import { formatDiagnostic } from "./diagnostics.ts";
import { hiddenContentDiagnostics } from "./hidden-content.ts";
import { parseSamString, parseSamSync } from "./parse.ts";
import type { Diagnostic, ParseResult, SamDocument } from "./types.ts";

/** Checks beyond the file itself (skill names against the library); their errors refuse the SAM. */
export type ExtraChecks = (sam: SamDocument, text?: string) => Diagnostic[];

export interface GateOptions {
  extraChecks?: ExtraChecks | undefined;
}

/** A SAM the gate refused: every diagnostic (errors and warnings), file:line:col. */
export class SamRefused extends Error {
  override name = "SamRefused";
  readonly diagnostics: Diagnostic[];
  readonly file: string;
  constructor(file: string, diagnostics: Diagnostic[]) {
    const errors = diagnostics.filter((d) => d.severity === "error").length;
    super(
      `${file} is not a valid SAM (${errors} error${errors === 1 ? "" : "s"}; run 'scifi validate ${file}')`,
    );
    this.file = file;
    this.diagnostics = diagnostics;
  }
  /** The diagnostics one a line, as `scifi validate` prints them. */
  report(): string {
    return this.diagnostics.map(formatDiagnostic).join("\n");
  }
}

/**
 * What `scifi validate` reports for one SAM file (diagnostics against the path as given), on disk
 * beyond the file too: a hidden asset's content reachable elsewhere in the task folder (a git blob,
 * a copy: hidden-content.ts) is an error.
 */
export function checkSam(file: string, options: GateOptions = {}): ParseResult {
  return gate(file, parseSamSync(file), options);
}

/**
 * The same for SAM text that is not on disk yet (a draft), read as if it were `file`: the same
 * checks, the on-disk ones against the folder it will be written to, so that what is accepted here
 * is what `scifi validate` accepts once it is written.
 */
export function checkSamText(text: string, file: string, options: GateOptions = {}): ParseResult {
  return gate(file, parseSamString(text, file), options, text);
}

/** The one gate: the parse, the on-disk checks, the caller's extra checks, the allowlist warnings. */
function gate(file: string, parsed: ParseResult, options: GateOptions, text?: string): ParseResult {
  const onDisk: ExtraChecks = (sam, samText) => [
    // A draft's folder may not exist yet: nothing in it can hold a copy then.
    ...(text === undefined || existsSync(dirname(sam.file))
      ? hiddenContentDiagnostics(sam, sam.file, undefined, text)
      : []),
    ...(options.extraChecks?.(sam, samText) ?? []),
  ];
  return withAllowlistWarnings(file, withExtraChecks(file, parsed, onDisk, text), text);
}

/** The parsed SAM, or SamRefused when `scifi validate` would report an error. */
export function gateSam(file: string, options: GateOptions = {}): SamDocument {
  return accepted(file, checkSam(file, options));
}

function accepted(file: string, result: ParseResult): SamDocument {
  if (!result.ok) throw new SamRefused(file, result.diagnostics);
  return result.sam;
}

function withExtraChecks(
  file: string,
  result: ParseResult,
  extraChecks: ExtraChecks | undefined,
  text?: string,
): ParseResult {
  if (!result.ok || !extraChecks) return result;
  // Report against the path as the user gave it, like the parser's own diagnostics.
  const extra = extraChecks(result.sam, text).map((d) => (d.file === result.sam.file ? { ...d, file } : d));
  if (extra.length === 0) return result;
  const diagnostics = [...result.diagnostics, ...extra];
  return extra.some((d) => d.severity === "error") ? { ok: false, diagnostics } : { ...result, diagnostics };
}
