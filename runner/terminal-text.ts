// What a person reads is what they decide on: every terminal listing of text an agent (or a tape,
// or a file the agent could write) supplied goes through these before it is printed (`scifi
// approvals`, `scifi memory list`, `scifi status`, `scifi audit show`, `scifi plan`, the run's
// terminal prompt), and the report's escapeHtml uses `visibleBlock` too. A terminal obeys control
// characters: a raw CR draws over what came before, `ESC[8m` hides what follows, a newline in one
// field fakes a line of the listing, and bidi or zero-width code points reorder or hide text. So
// every such code point is shown as an escape (`\r`, `\x1b`, `\u{202e}`), never sent.
// Backslashes are left as they are: a literal `\x1b` the agent typed shows exactly what it typed,
// and hides nothing.

/**
 * Code points a terminal does not print as themselves: controls (C0, DEL, C1), format characters
 * (bidi overrides, zero-width), line and paragraph separators, private-use, surrogates, unassigned,
 * every space other than U+0020, and the default-ignorable code points outside those categories
 * (combining grapheme joiner, variation selectors, Hangul fillers), which terminals draw as nothing
 * or as blank.
 */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}]|(?! )\p{Zs}/gu;
const HAS_HIDDEN = new RegExp(HIDDEN.source, "u");
/** The same, but a newline and a tab pass: multi-line text keeps its lines. */
const HIDDEN_IN_BLOCK =
  /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}]|(?! )\p{Zs}/gu;

const SHORT: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t", "\0": "\\0" };

function escapeCodePoint(c: string): string {
  const short = SHORT[c];
  if (short) return short;
  const code = c.codePointAt(0) ?? 0;
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u{${code.toString(16)}}`;
}

/** One line of text: every non-printing code point, newlines included, shown as an escape. */
export function visible(text: string): string {
  return text.replace(HIDDEN, escapeCodePoint);
}

/** Multi-line text: lines (and tabs) kept, every other non-printing code point shown as an escape. */
export function visibleBlock(text: string): string {
  return text.replace(HIDDEN_IN_BLOCK, escapeCodePoint);
}

export interface LinesOptions {
  /** Lines shown at most; the rest is announced, never dropped silently. */
  max?: number;
  /** Put before every shown line (e.g. `  | `), so no content line can pass for a listing line. */
  prefix?: string;
  /** Where the whole text is, for the notice of a cut (e.g. `scifi approvals show RUN ID`). */
  whole?: string;
}

/**
 * Multi-line text as listing lines: each line made visible and prefixed; past `max` lines one
 * notice says how many lines are left out and where the whole text is.
 */
export function visibleLines(text: string, options: LinesOptions = {}): string[] {
  const prefix = options.prefix ?? "";
  const lines = text.split("\n");
  const max = options.max ?? Number.POSITIVE_INFINITY;
  const shown = lines.slice(0, max).map((line) => `${prefix}${visibleBlock(line)}`);
  const left = lines.length - shown.length;
  if (left > 0) {
    shown.push(
      `${prefix}... ${left} more line${left === 1 ? "" : "s"} not shown (${lines.length} in all)${options.whole ? `; the whole text: ${options.whole}` : ""}`,
    );
  }
  return shown;
}

/**
 * Text cut to `max` characters for a one-line preview, with the cut said (how many characters are
 * left out and where the whole text is), never silent; whitespace runs fold to one space.
 */
export function visiblePreview(text: string, max: number, whole?: string): string {
  const flat = text.replace(/[ \t\n\r]+/g, " ").trim();
  if (flat.length <= max) return visible(flat);
  const left = flat.length - max;
  return `${visible(flat.slice(0, max))}... (${left} more characters${whole ? `: ${whole}` : ""})`;
}

const PLAIN_WORD = /^[A-Za-z0-9_@%+=:,./-]+$/;

/**
 * One argument as a POSIX shell would need it typed: plain words as they are, others in single
 * quotes, and anything with a non-printing code point (a newline, an ESC) as `$'...'` with the
 * escape shown, so one argument never looks like two, or like a line of its own.
 */
export function shellQuote(arg: string): string {
  if (arg !== "" && PLAIN_WORD.test(arg)) return arg;
  if (!HAS_HIDDEN.test(arg)) return `'${arg.replace(/'/g, `'\\''`)}'`;
  return `$'${arg.replace(/[\\']/g, (c) => `\\${c}`).replace(HIDDEN, shellEscape)}'`;
}

/**
 * A code point as bash's `$'...'` decodes it back (scripts scifi writes run these words): `\n`,
 * `\xHH` below 0x80, `\uHHHH` and `\UHHHHHHHH` above (a `\xHH` there would be one raw byte, not the
 * code point's UTF-8).
 */
function shellEscape(c: string): string {
  const short = SHORT[c];
  if (short) return short;
  const code = c.codePointAt(0) ?? 0;
  if (code < 0x80) return `\\x${code.toString(16).padStart(2, "0")}`;
  return code <= 0xffff
    ? `\\u${code.toString(16).padStart(4, "0")}`
    : `\\U${code.toString(16).padStart(8, "0")}`;
}

/** Arguments joined as one shell command line (each quoted by `shellQuote`). */
export function shellWords(args: readonly string[]): string {
  return args.map(shellQuote).join(" ");
}

/**
 * A value as JSON for a terminal: JSON.stringify escapes only C0 controls, so every other
 * non-printing code point inside a string (bidi overrides, C1 controls, zero-width) is written as a
 * `\uXXXX` escape too. Still valid JSON that parses to the same value; outside strings JSON holds
 * only its own punctuation, spaces and newlines.
 */
export function visibleJson(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(HIDDEN_IN_BLOCK, (c) =>
    [...Array(c.length).keys()].map((i) => `\\u${c.charCodeAt(i).toString(16).padStart(4, "0")}`).join(""),
  );
}
