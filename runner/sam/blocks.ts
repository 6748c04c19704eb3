// The Markdown block structure of a SAM body, as mdast nodes with source offsets. remark (micromark)
// is the reference parser, but it costs about 1.2 ms per 5 KB body, most of a whole SAM's parse,
// and 93% of that is micromark's tokenizer with every unused construct already switched off, so no
// slimmer remark (mdast-util-from-markdown alone, fewer extensions) gets much below it.
// markdown-it, also a well-kept CommonMark parser, finds the same blocks in about 50 µs when run
// block-only (measured with bench/sam.bench.ts, issue 19), but gives line ranges, not offsets. Its
// tokens are turned into the mdast nodes the section reader uses, with the offsets micromark gives,
// for bodies in the subset where that translation is exact; any other body is parsed by remark:
// tabs, CR line endings, NUL, block quotes, unclosed fences, multi-line setext headings, and the
// places where micromark and markdown-it read lists differently (lazy continuation lines in list
// items, list items right after indented code, `01.` markers, an empty item followed by a blank
// line), and deep nesting. test/sam/blocks.test.ts compares both parsers on edge cases and on
// generated bodies.
import MarkdownIt, { type StateBlock, type Token } from "markdown-it";
import type { Code, Heading, Html, List, ListItem, Paragraph, RootContent, ThematicBreak } from "mdast";
import remarkParse from "remark-parse";
import { unified } from "unified";

/**
 * Inline constructs (emphasis, links, code spans, escapes ...) and link definitions never change
 * which block a line belongs to, and section text is sliced verbatim from the source, so the parser
 * skips them: this makes parsing 2-4x faster. Heading text is therefore taken literally
 * (`# Fit *ROOT*` has the title `Fit *ROOT*`).
 */
const UNUSED_CONSTRUCTS = [
  "definition",
  "attention",
  "autolink",
  "characterEscape",
  "characterReference",
  "codeText",
  "hardBreakEscape",
  "htmlText",
  "labelStartImage",
  "labelStartLink",
  "labelEnd",
];

const processor = unified()
  .use(remarkParse)
  .data("micromarkExtensions", [{ disable: { null: UNUSED_CONSTRUCTS } }]);

/** The top-level blocks of `body` as remark parses them (the reference). */
export function remarkBlocks(body: string): RootContent[] {
  return processor.parse(body).children;
}

/** The top-level blocks of `body`: markdown-it where its translation is exact, else remark. */
export function parseBlocks(body: string): RootContent[] {
  return fastBlocks(body) ?? remarkBlocks(body);
}

/** markdown-it's nesting limit (the commonmark preset's); deeper bodies go to remark. */
const MAX_NESTING = 20;

interface Meta {
  /** Offset where micromark starts the node. */
  start: number;
}

const md = new MarkdownIt("commonmark", { maxNesting: MAX_NESTING });
// Block structure only, and no link reference definitions (remark is told to skip them too).
md.core.ruler.disable(["inline", "text_join"]);
md.block.ruler.disable("reference");

/** Blocks that micromark starts right after the container prefixes, their indentation included. */
const FROM_PREFIX = new Set(["code", "html_block"]);

/**
 * Each block rule is wrapped to record where micromark starts the block it made: at its first
 * character after container prefixes and indentation, except indented code and HTML (FROM_PREFIX).
 */
function wrap(name: string, after?: (state: StateBlock, startLine: number, token: Token) => void): void {
  // The ruler lists its rules only in `__rules__`; `at` (public) replaces one by name, and its
  // `alt` (the chains where the rule may end a paragraph, list or block quote) must be kept.
  const entry = md.block.ruler.__rules__.find((r) => r.name === name);
  if (!entry) throw new Error(`markdown-it has no block rule ${name}`);
  const { fn: rule, alt } = entry;
  md.block.ruler.at(
    name,
    (state, startLine, endLine, silent) => {
      const first = state.tokens.length;
      const blkIndent = state.blkIndent;
      if (!rule(state, startLine, endLine, silent)) return false;
      const token = state.tokens[first];
      if (silent || !token) return true;
      const lineStart = state.bMarks[startLine] ?? 0;
      const start = FROM_PREFIX.has(name)
        ? lineStart + blkIndent
        : lineStart + (state.tShift[startLine] ?? 0);
      token.meta = { start } satisfies Meta;
      after?.(state, startLine, token);
      return true;
    },
    { alt: [...alt] },
  );
}

/** Marks the body as outside the subset translated exactly (read back from the parse's env). */
const unsupported = (state: StateBlock): void => {
  state.env.unsupported = true;
};

wrap("code");
wrap("fence", (state, startLine, token) => {
  if (!fenceClosed(state, startLine, token)) unsupported(state);
});
wrap("blockquote", unsupported);
wrap("hr");
wrap("list");
wrap("html_block");
wrap("heading");
wrap("lheading", (state, startLine) => {
  if (state.line - startLine > 2) unsupported(state);
});
wrap("paragraph", (state, startLine) => {
  // A lazy continuation line (less indented than its list item): micromark reads some of those
  // (an HTML tag line) as a block of the item, CommonMark and markdown-it as paragraph text.
  for (let line = startLine + 1; line < state.line; line++)
    if ((state.sCount[line] ?? 0) < state.blkIndent && !state.isEmpty(line)) unsupported(state);
  // A line indented 4 or more but less than the item ends the paragraph in markdown-it when it
  // looks like a block start; CommonMark (and micromark) may read it as a lazy continuation.
  const next = state.line;
  const indent = state.sCount[next] ?? 0;
  if (next < state.lineMax && !state.isEmpty(next) && indent < state.blkIndent && indent >= 4)
    unsupported(state);
});

/** Whether the fence just parsed ended on a closing fence (markdown-it's own closing test). */
function fenceClosed(state: StateBlock, startLine: number, token: Token): boolean {
  const last = state.line - 1;
  if (last <= startLine || (state.sCount[last] ?? 0) - state.blkIndent >= 4) return false;
  const marker = token.markup.charCodeAt(0);
  let pos = (state.bMarks[last] ?? 0) + (state.tShift[last] ?? 0);
  const max = state.eMarks[last] ?? 0;
  const from = pos;
  while (pos < max && state.src.charCodeAt(pos) === marker) pos++;
  if (pos - from < token.markup.length) return false;
  return state.skipSpaces(pos) >= max;
}

/** Characters that make micromark's offsets or values differ from a plain line reading. */
const UNSUPPORTED_TEXT = /[\t\r\0]/;

interface Lines {
  /** Offset of each line's first character and of its end (the `\n` or the end of the body). */
  starts: number[];
  ends: number[];
}

function lineTable(body: string): Lines {
  const starts = [0];
  const ends: number[] = [];
  for (let i = body.indexOf("\n"); i !== -1; i = body.indexOf("\n", i + 1)) {
    ends.push(i);
    starts.push(i + 1);
  }
  ends.push(body.length);
  return { starts, ends };
}

/** markdown-it's blocks as mdast nodes, or undefined when the body is outside the exact subset. */
export function fastBlocks(body: string): RootContent[] | undefined {
  if (UNSUPPORTED_TEXT.test(body)) return undefined;
  const env: { unsupported?: boolean } = {};
  const tokens = md.parse(body, env);
  if (env.unsupported) return undefined;
  for (const token of tokens) if (token.level >= MAX_NESTING - 1) return undefined;
  const lines = lineTable(body);
  /** First non-blank line after each indented code block (see `list_item_open`). */
  const afterCode = new Set<number>();
  const root: RootContent[] = [];
  /** Open lists and list items, with the offset each starts at. */
  const stack: { node: List | ListItem; start: number }[] = [];
  const add = (node: RootContent | ListItem): void => {
    const parent = stack[stack.length - 1]?.node;
    if (parent) (parent.children as (RootContent | ListItem)[]).push(node);
    else root.push(node as RootContent);
  };
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    switch (token.type) {
      case "heading_open": {
        const text = tokens[i + 1]?.content ?? "";
        add({
          type: "heading",
          depth: Number(token.tag.slice(1)) as Heading["depth"],
          children: text === "" ? [] : [{ type: "text", value: text }],
          position: span(lines, token),
        } satisfies Heading);
        i += 2;
        break;
      }
      case "paragraph_open":
        add({ type: "paragraph", children: [], position: span(lines, token) } satisfies Paragraph);
        i += 2;
        break;
      case "fence":
        add({
          type: "code",
          ...fenceInfo(token.info),
          value: codeValue(token),
          position: span(lines, token),
        });
        break;
      case "code_block": {
        let next = token.map?.[1] ?? 0;
        while (next < lines.starts.length - 1 && isBlank(body, lines, next)) next++;
        afterCode.add(next);
        add({ type: "code", lang: null, meta: null, value: codeValue(token), position: span(lines, token) });
        break;
      }
      case "html_block": {
        const position = span(lines, token);
        const value = body.slice(position.start.offset, position.end.offset);
        add({ type: "html", value, position } satisfies Html);
        break;
      }
      case "hr":
        add({ type: "thematicBreak", position: span(lines, token) } satisfies ThematicBreak);
        break;
      case "bullet_list_open":
      case "ordered_list_open": {
        const list: List = { type: "list", ordered: token.type === "ordered_list_open", children: [] };
        add(list);
        stack.push({ node: list, start: metaStart(token) });
        break;
      }
      case "list_item_open": {
        const open = stack[stack.length - 1];
        if (open?.node.type !== "list") return undefined;
        // micromark lets a list item interrupt indented code (even across blank lines) only as it
        // lets one interrupt a paragraph (marker `1`, not empty), and reads `01.` as never
        // interrupting; CommonMark and markdown-it differ from it there, so remark decides.
        if (afterCode.has(token.map?.[0] ?? 0) || /^0+1$/.test(token.info)) return undefined;
        // The first item starts where its list does (perhaps after an outer item's marker on the
        // same line); a later one at its marker, the first character of its line.
        const start =
          open.node.children.length === 0
            ? open.start
            : firstNonSpace(body, lines.starts[token.map?.[0] ?? 0] ?? 0);
        // After an empty item and a blank line, markdown-it ends the list; micromark goes on.
        const line = token.map?.[0] ?? 0;
        if (tokens[i + 1]?.type === "list_item_close" && isBlank(body, lines, line + 1)) return undefined;
        const item: ListItem = { type: "listItem", children: [] };
        add(item);
        stack.push({ node: item, start });
        break;
      }
      case "list_item_close":
      case "bullet_list_close":
      case "ordered_list_close": {
        const open = stack.pop();
        if (!open) return undefined;
        // A container ends where its last block does (micromark leaves trailing blank lines out).
        const last = open.node.children[open.node.children.length - 1];
        const end = last?.position?.end.offset ?? lines.ends[lineOf(lines, open.start)] ?? open.start;
        open.node.position = { start: point(lines, open.start), end: point(lines, end) };
        break;
      }
      default:
        // A token outside the subset (block quotes are already caught by their rule).
        return undefined;
    }
  }
  return root;
}

/** Whether the line holds spaces only (false past the last line). */
function isBlank(body: string, lines: Lines, line: number): boolean {
  if (line >= lines.starts.length) return false;
  const end = lines.ends[line] ?? 0;
  for (let i = lines.starts[line] ?? 0; i < end; i++) if (body.charCodeAt(i) !== 32) return false;
  return true;
}

/** micromark's `lang` (the info string's first word) and `meta` (the rest, as written). */
function fenceInfo(params: string): { lang: string | null; meta: string | null } {
  let i = 0;
  while (params.charCodeAt(i) === 32) i++;
  if (i === params.length) return { lang: null, meta: null };
  const space = params.indexOf(" ", i);
  if (space === -1) return { lang: params.slice(i), meta: null };
  let j = space;
  while (params.charCodeAt(j) === 32) j++;
  return { lang: params.slice(i, space), meta: j === params.length ? null : params.slice(j) };
}

/** markdown-it ends every code line with `\n`; mdast joins the lines. */
function codeValue(token: Token): string {
  return token.content.endsWith("\n") ? token.content.slice(0, -1) : token.content;
}

function metaStart(token: Token): number {
  const start = token.meta?.start;
  return typeof start === "number" ? start : 0;
}

/** From micromark's start to the end of the token's last line. */
function span(lines: Lines, token: Token): NonNullable<Code["position"]> {
  const start = metaStart(token);
  const last = (token.map?.[1] ?? 1) - 1;
  return { start: point(lines, start), end: point(lines, lines.ends[last] ?? start) };
}

function firstNonSpace(body: string, from: number): number {
  let i = from;
  while (body.charCodeAt(i) === 32) i++;
  return i;
}

/** Index of the line holding `offset`. */
function lineOf(lines: Lines, offset: number): number {
  let low = 0;
  let high = lines.starts.length - 1;
  while (low < high) {
    const mid = (low + high + 1) >> 1;
    if ((lines.starts[mid] ?? 0) <= offset) low = mid;
    else high = mid - 1;
  }
  return low;
}

/** Line and column (1-based, in characters) of an offset, as micromark counts them. */
function point(lines: Lines, offset: number): { line: number; column: number; offset: number } {
  const line = lineOf(lines, offset);
  return { line: line + 1, column: offset - (lines.starts[line] ?? 0) + 1, offset };
}
