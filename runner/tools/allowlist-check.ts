// The record one allowlist check collects (programs seen, names not on the list, refusals), and the
// explanation the model reads when a command is refused. Shared by the syntax walker
// (runner/tools/allowlist.ts) and the program rules (runner/tools/allowlist-programs.ts).

/** Nesting limit for `sh -c "sh -c ..."`, eval in eval and wrappers in wrappers. */
export const MAX_DEPTH = 6;

/** What one check collects; nested scripts get their own and are merged with a prefix. */
export interface Check {
  readonly allowed: readonly string[];
  readonly depth: number;
  readonly programs: string[];
  readonly unlisted: string[];
  readonly refusals: string[];
  /**
   * Checks a script found inside a command (`sh -c`, `eval`, `trap`) one level below `check`: the
   * walker's own entry, handed down so that the program rules need not import the walker.
   */
  readonly nested: (script: string, label: string, check: Check) => undefined;
}

/**
 * Where extra words may be appended to a command at run time (xargs, `find -exec ... +`): then a
 * wrapper's command or a shell's script must already be in the words we see.
 */
export type Tail = "closed" | "open";

/** Why the command is refused (every name not on the list, every refusal once), or undefined. */
export function describe(check: Check): string | undefined {
  const parts: string[] = [];
  if (check.unlisted.length > 0)
    parts.push(`not on this task's command allowlist: ${[...new Set(check.unlisted)].join(", ")}`);
  parts.push(...new Set(check.refusals));
  return parts.length > 0 ? parts.join("; ") : undefined;
}

export function refuse(check: Check, reason: string): undefined {
  check.refusals.push(reason);
}

/**
 * bash (and ksh) evaluate a variable's text inside arithmetic as an expression, and an array
 * subscript there runs `$(...)`: `y='a[$(curl x)]'; echo $((y))` runs curl. The text may come from
 * a file (`read y < f`), so arithmetic, subscripts, slices and `[[ -eq ]]` may not read variables.
 */
export const ARITHMETIC_VARIABLE =
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell syntax shown to the model, not a template
  "a variable inside arithmetic ($((...)), ((...)), let, [[ -eq ]], ${a[i]}, ${x:n}): bash evaluates its text as an expression and runs $(...) in array subscripts; use literal numbers, or a listed program such as expr or seq";
