// Text the runner did not choose (check output, a claim, a summary, review findings, file names),
// placed into Markdown the runner writes (memory entries, the briefs later agents read), by
// construction unable to change that Markdown's structure: it can close no quote, start no
// heading, list item or section, add no line of the runner's, and become no code or HTML.
// - `fenceBlock`: a fenced block whose fence is longer than any run of its character anywhere in
//   the content, so no content line can close it; the content's line breaks other than LF (CR,
//   U+2028, NEL) and its control characters (ANSI) are shown as escapes (terminal-text's
//   visibleBlock), so every content line is one Markdown line.
// - `inlineText`: one line of plain text: every line break and control character shown as an escape
//   (terminal-text's visible), every character that marks up inline text backslash-escaped (\ ` * _
//   [ ] < ~ &: no code span, emphasis, link, HTML or entity), the marks that count only at a line's
//   start escaped there (# > + = -, and the . or ) of `1.`: no heading, quote, list item or
//   underline), and spaces at either end written as `&#32;` (which no parser reads as indentation).
//   Ordinary prose ("Write done.txt; re-run it!") stays as it was written.
// - `codeSpan`: one line as inline code, its delimiter longer than any backtick run in it.
// Each reads back (remark) as exactly the visible form of what was given: tested by property.
import { visible, visibleBlock } from "./terminal-text.ts";

/** The longest run of `char` anywhere in `text`. */
function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    if (run > longest) longest = run;
  }
  return longest;
}

/**
 * `content` as a fenced block (info string `info`, one word of the runner's): the fence character is
 * whichever of ` and ~ runs shorter in the content, and the fence is longer than that run.
 */
export function fenceBlock(content: string, info = "text"): string {
  const text = visibleBlock(content);
  const ticks = longestRun(text, "`");
  const tildes = longestRun(text, "~");
  const [char, run] = ticks <= tildes ? ["`", ticks] : ["~", tildes];
  const fence = char.repeat(Math.max(3, run + 1));
  return `${fence}${info}\n${text === "" ? "" : `${text}\n`}${fence}`;
}

/** Marks anywhere in a line: escapes, code, emphasis, links, HTML, entities, strikethrough. */
const INLINE_MARKS = /[\\`*_[\]<~&]/g;
/** Marks only at a line's start: a heading, quote, list item, thematic break or setext underline. */
const LEADING_MARK = /^(?:[#>+=-]|\d+(?=[.)]))/;

/** One line of plain Markdown text that reads back as `visible(text)`; see the file comment. */
export function inlineText(text: string): string {
  const escaped = visible(text).replace(INLINE_MARKS, (c) => `\\${c}`);
  const lead = escaped.replace(LEADING_MARK, (m) => (/\d/.test(m) ? `${m}\\` : `\\${m}`));
  return lead.replace(/^ +| +$/g, (spaces) => "&#32;".repeat(spaces.length));
}

/** One line as inline code that reads back as `visible(text)`; empty text is an empty plain text. */
export function codeSpan(text: string): string {
  const shown = visible(text);
  if (shown === "") return "";
  const delimiter = "`".repeat(longestRun(shown, "`") + 1);
  // A parser strips one space from each end when both ends hold one (unless all spaces): pad then.
  const pad = /^[` ]|[` ]$/.test(shown) && !/^ +$/.test(shown) ? " " : "";
  return `${delimiter}${pad}${shown}${pad}${delimiter}`;
}
