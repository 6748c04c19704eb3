// Per-SAM command allowlist for the bash tool. The command is parsed by a real shell parser
// (mvdan/sh), so every simple command is seen wherever it hides: after newlines, `;`, `&&`, `||`,
// in pipes, subshells, blocks, functions, `$(...)`, backticks, process substitution and
// assignments. Anything whose program name is not a plain literal on the list is refused.
import { basename } from "node:path";
import sh, { type ShNode, type ShWord } from "mvdan-sh";

export type AllowVerdict = { ok: true; programs: string[] } | { ok: false; reason: string };

/** Declaration builtins appear as DeclClause, not CallExpr; their variant is the program name. */
const DECL_NODE = "DeclClause";
/** Shells whose `-c SCRIPT` argument is itself checked, so `sh -c '...'` cannot hide a program. */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh"]);
/** Nesting limit for `sh -c "sh -c ..."`. */
const MAX_DEPTH = 4;

export function checkCommand(command: string, allowed: readonly string[], depth = 0): AllowVerdict {
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
      else {
        programs.push(name);
        const inner = SHELLS.has(basename(name)) ? shellScriptArg(args) : undefined;
        if (inner === null) refusals.push(`'${name} -c' with a script that is not a plain quoted string`);
        else if (inner !== undefined) {
          const verdict =
            depth >= MAX_DEPTH
              ? ({ ok: false, reason: "shells nested too deeply" } as const)
              : checkCommand(inner, allowed, depth + 1);
          if (verdict.ok) programs.push(...verdict.programs);
          else refusals.push(`inside '${name} -c': ${verdict.reason.replace(/ Allowed programs: .*$/, "")}`);
        }
      }
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

/**
 * The script of `sh -c SCRIPT`: undefined when there is no `-c`, null when the script is not a
 * literal (a variable or substitution we cannot check statically).
 */
function shellScriptArg(args: ShWord[]): string | null | undefined {
  const flag = args.findIndex((word, i) => i > 0 && /^-[a-z]*c[a-z]*$/.test(word.Lit()));
  if (flag < 0) return undefined;
  const script = args[flag + 1];
  return script ? literalValue(script) : null;
}

function literalValue(word: ShNode): string | null {
  let text = "";
  for (const part of (word.Parts as ShNode[] | null) ?? []) {
    const type = sh.syntax.NodeType(part);
    if (type === "Lit" || type === "SglQuoted") text += String(part.Value);
    else if (type === "DblQuoted") {
      const inner = literalValue(part);
      if (inner === null) return null;
      text += inner;
    } else return null;
  }
  return text;
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "object" && error !== null && "Error" in error) {
    const fn = (error as { Error: unknown }).Error;
    if (typeof fn === "function") return String(fn.call(error));
  }
  return String(error);
}
