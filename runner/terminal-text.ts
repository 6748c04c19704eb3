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
 * every space other than U+0020, the default-ignorable code points outside those categories
 * (combining grapheme joiner, variation selectors, Hangul fillers U+115F, U+1160, U+3164, U+FFA0),
 * which terminals draw as nothing or as blank, and U+2800 (braille blank, a symbol a terminal draws
 * as an empty cell: runs of it pad a line until a soft wrap starts a row of the agent's own text).
 */
const HIDDEN =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}\u2800]|(?! )\p{Zs}/gu;
const HAS_HIDDEN = new RegExp(HIDDEN.source, "u");
/** The same, but a newline and a tab pass: multi-line text keeps its lines. */
const HIDDEN_IN_BLOCK =
  /(?![\n\t])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\p{Default_Ignorable_Code_Point}\u2800]|(?! )\p{Zs}/gu;

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
  /**
   * Fold every line to rows of at most this many terminal columns, prefix included, tabs expanded
   * (foldRow): a terminal that soft-wraps a longer line would draw its rest without the prefix.
   */
  width?: number;
  /** Put before each row a fold adds (default: `prefix`); as wide as `prefix` or wider. */
  continuation?: string;
}

/**
 * Multi-line text as listing lines: each line made visible and prefixed (folded to `width`, each
 * row prefixed); past `max` lines one notice says how many lines are left out and where the whole
 * text is.
 */
export function visibleLines(text: string, options: LinesOptions = {}): string[] {
  const prefix = options.prefix ?? "";
  const lines = text.split("\n");
  const max = options.max ?? Number.POSITIVE_INFINITY;
  const width = options.width;
  const fold = (line: string) =>
    width === undefined
      ? [`${prefix}${line}`]
      : foldRow(line, { first: prefix, continuation: options.continuation ?? prefix, width });
  const kept = lines.slice(0, max);
  const shown = kept.flatMap((line) => fold(visibleBlock(line)));
  const left = lines.length - kept.length;
  if (left > 0) {
    shown.push(
      ...fold(
        `... ${left} more line${left === 1 ? "" : "s"} not shown (${lines.length} in all)${options.whole ? `; the whole text: ${options.whole}` : ""}`,
      ),
    );
  }
  return shown;
}

/** The columns a listing folds at: the narrowest common terminal, so no row soft-wraps on one. */
export const LISTING_WIDTH = 80;

/**
 * One line of visible text (visible or visibleBlock already applied) as rows of at most `width`
 * terminal columns: the first after `first`, each further one after `continuation`, so a terminal
 * never soft-wraps a row into one that starts with the text's own characters. Tabs become spaces
 * to the next multiple of 8 (a terminal's tab stops depend on the column, so a tab's width is
 * otherwise unknown). A printable ASCII character takes one column; every other code point is
 * counted as two (a wide CJK or emoji glyph takes two; counting more than it takes only folds
 * sooner). A line that fits is one row, unchanged but for its tabs.
 */
export function foldRow(
  line: string,
  options: { first: string; continuation: string; width: number },
): string[] {
  const rows: string[] = [];
  let lead = options.first;
  let room = Math.max(1, options.width - cells(lead));
  let row = "";
  let used = 0;
  let column = 0;
  for (const c of line) {
    const text = c === "\t" ? " ".repeat(8 - (column % 8)) : c;
    column += text.length;
    for (const piece of c === "\t" ? [...text] : [text]) {
      const wide = cells(piece);
      if (used + wide > room && row !== "") {
        rows.push(`${lead}${row}`);
        lead = options.continuation;
        room = Math.max(1, options.width - cells(lead));
        row = "";
        used = 0;
      }
      row += piece;
      used += wide;
    }
  }
  rows.push(`${lead}${row}`);
  return rows;
}

/** Columns `text` takes at most: 1 for each printable ASCII character, 2 for any other code point. */
function cells(text: string): number {
  let n = 0;
  for (const c of text) n += c >= " " && c <= "~" ? 1 : 2;
  return n;
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
 * `\xHH` below 0x80, and above it its UTF-8 bytes, each `\xHH`. Not `\uHHHH`: bash decodes that
 * only in a UTF-8 locale, and a SLURM job (`--export=NONE`) or a cron job often runs in the C
 * locale, where `$'\u2028'` is the six characters `\u2028`; bytes read back the same in any locale.
 */
function shellEscape(c: string): string {
  const short = SHORT[c];
  if (short) return short;
  return [...Buffer.from(c, "utf8")].map((byte) => `\\x${byte.toString(16).padStart(2, "0")}`).join("");
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
