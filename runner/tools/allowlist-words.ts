// Words of a parsed command as the allowlist sees them: the text a word will have at run time when
// nothing in it expands (no variable, substitution, glob or brace), else unknown. Anything the
// checker decides from (a program name, an option, a `-c` script) must be known.
import sh, { type ShNode } from "mvdan-sh";

export interface Arg {
  /** The word's value with quotes removed, or null when it expands at run time (or may split). */
  text: string | null;
  /** An unquoted literal without backslashes: how a program name must be written. */
  plain: boolean;
}

/** Unquoted glob characters, a leading tilde or a brace list make the shell rewrite the word. */
const EXPANDS_UNQUOTED = /[*?]|\[.*\]|^~|\{[^}]*(,|\.\.)[^}]*\}/;

export function wordArg(word: ShNode): Arg {
  const parts = (word.Parts as ShNode[] | null) ?? [];
  let text = "";
  let plain = true;
  for (const [index, part] of parts.entries()) {
    const type = sh.syntax.NodeType(part);
    const value = String(part.Value ?? "");
    if (type === "Lit") {
      // A tilde only expands at the start of the word; elsewhere it is a plain character.
      if (EXPANDS_UNQUOTED.test(index === 0 ? value : value.replace(/^~/, ""))) return unknown();
      if (value.includes("\\")) plain = false;
      text += value.replace(/\\\n/g, "").replace(/\\(.)/gs, "$1");
    } else if (type === "SglQuoted" && part.Dollar !== true) {
      plain = false;
      text += value;
    } else if (type === "DblQuoted") {
      const inner = quotedText(part);
      if (inner === null) return unknown();
      plain = false;
      text += inner;
    } else return unknown(); // $'...' escapes, expansions, substitutions, extglobs
  }
  return { text, plain };
}

/** A known word, e.g. the implicit `echo` that xargs runs. */
export function knownArg(text: string): Arg {
  return { text, plain: true };
}

export function unknown(): Arg {
  return { text: null, plain: false };
}

function quotedText(quoted: ShNode): string | null {
  let text = "";
  for (const part of (quoted.Parts as ShNode[] | null) ?? []) {
    if (sh.syntax.NodeType(part) !== "Lit") return null;
    text += String(part.Value)
      .replace(/\\\n/g, "")
      .replace(/\\([$`"\\])/g, "$1");
  }
  return text;
}

/** A shell variable name that may be assigned: lower-case letters mark a script's own variable. */
export function writableName(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && /[a-z]/.test(name);
}

export function refusedName(name: string): string {
  return `assigning to '${name}' (names without a lower-case letter are the environment programs read, such as PATH, LD_PRELOAD, BASH_ENV, IFS; an array subscript is code in bash): use a lower-case name like 'out'`;
}
