// `scifi validate` warnings for `allow_commands` entries that grant more than a program name
// suggests: a shell or an interpreter can run anything, and programs that run other programs in
// ways the allowlist does not read are refused by the bash tool even when listed. The bash tool's
// rules are in runner/tools/allowlist.ts; the kinds of programs are shared with it.
import { readFileSync } from "node:fs";
import { programKind } from "./program-kinds.ts";
import type { Diagnostic, ParseResult, SamDocument } from "./types.ts";

export function allowlistWarnings(sam: SamDocument, file: string = sam.file, text?: string): Diagnostic[] {
  const entries = sam.metadata.allowCommands ?? [];
  const warnings: Diagnostic[] = [];
  for (const entry of entries) {
    const message = warningFor(entry);
    if (message) warnings.push({ file, ...position(sam.file, entry, text), severity: "warning", message });
  }
  return warnings;
}

/** The result with the warnings added (a valid SAM stays valid: these are warnings only). */
export function withAllowlistWarnings(file: string, result: ParseResult, text?: string): ParseResult {
  if (!result.ok) return result;
  const warnings = allowlistWarnings(result.sam, file, text);
  return warnings.length === 0 ? result : { ...result, diagnostics: [...result.diagnostics, ...warnings] };
}

function warningFor(entry: string): string | undefined {
  switch (programKind(entry)) {
    case "shell":
      return `allow_commands lists the shell '${entry}': allowing it allows everything it can run. The bash tool lets it run only a '${entry} -c' script that it checks (no script files, standard input, -i or -l), and commands already run in a shell, so list the programs the scripts need instead.`;
    case "interpreter":
      return `allow_commands lists the interpreter '${entry}': allowing it allows everything it can run, so the bash tool refuses every form of it that runs code (-c/-e, a script file, standard input). List a script by its path (./analyse.py, with a #! line) if the agent must run it.`;
    case "unchecked-runner":
      return `allow_commands lists '${entry}', which runs other programs in ways the allowlist does not read: the bash tool refuses it under an allowlist. List the programs themselves.`;
    default:
      return undefined;
  }
}

/** Where the entry is written: its line in the front matter, else the file's first line. */
function position(samFile: string, entry: string, source?: string): { line: number; column: number } {
  let lines: string[];
  try {
    // A draft not written yet is read from its text.
    lines = (source ?? readFileSync(samFile, "utf8")).split("\n");
  } catch {
    return { line: 1, column: 1 };
  }
  const index = lines.findIndex((l) => /^allow_commands\s*:/.test(l));
  if (index < 0) return { line: 1, column: 1 };
  const text = lines[index] ?? "";
  const column = text.search(new RegExp(`(?<=[\\s,\\[])${escapeRegExp(entry)}(?=[\\s,\\]]|$)`));
  return { line: index + 1, column: column < 0 ? 1 : column + 1 };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
