// Per-SAM command allowlist for the bash tool. The command is parsed by a real shell parser
// (mvdan/sh), so every simple command is seen wherever it hides: after newlines, `;`, `&&`, `||`,
// in pipes, subshells, blocks, functions, `$(...)`, backticks, process substitution and
// assignments. Anything whose program name is not a plain literal on the list is refused.
import { basename } from "node:path";
import sh, { type ShNode, type ShWord } from "mvdan-sh";

export type AllowVerdict = { ok: true; programs: string[] } | { ok: false; reason: string };

/** Declaration builtins appear as DeclClause, not CallExpr; their variant is the program name. */
const DECL_NODE = "DeclClause";

export function checkCommand(command: string, allowed: readonly string[]): AllowVerdict {
  let file: ShNode;
  try {
    file = sh.syntax.NewParser().Parse(command, "command");
  } catch (error) {
    return { ok: false, reason: `the command does not parse as a shell script (${describeError(error)})` };
  }
  const allow = new Set(allowed);
  const programs: string[] = [];
  const refusals: string[] = [];
  sh.syntax.Walk(file, (node) => {
    if (!node) return true;
    const type = sh.syntax.NodeType(node);
    if (type === "CallExpr") {
      const args = node.Args as ShWord[] | null;
      if (!args || args.length === 0) return true; // a bare assignment `a=1`; its value is walked
      const name = args[0]?.Lit() ?? "";
      if (name === "")
        refusals.push("a command name that is not a plain word (variable, substitution or quoting)");
      else if (!allow.has(name) && !allow.has(basename(name))) refusals.push(`'${name}'`);
      else programs.push(name);
    } else if (type === DECL_NODE) {
      const variant = String((node.Variant as { Value?: string } | undefined)?.Value ?? "declare");
      if (!allow.has(variant)) refusals.push(`'${variant}'`);
      else programs.push(variant);
    }
    return true;
  });
  if (refusals.length > 0) {
    return {
      ok: false,
      reason: `not on this task's command allowlist: ${[...new Set(refusals)].join(", ")}. Allowed programs: ${[...allow].join(", ")}.`,
    };
  }
  return { ok: true, programs };
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "object" && error !== null && "Error" in error) {
    const fn = (error as { Error: unknown }).Error;
    if (typeof fn === "function") return String(fn.call(error));
  }
  return String(error);
}
