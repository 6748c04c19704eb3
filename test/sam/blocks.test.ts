// The fast block parse (markdown-it) against the reference (remark): on every body it accepts, the
// nodes must carry what the section reader uses exactly as remark gives it, and a whole SAM must
// parse to the same result; bodies outside its subset must be left to remark.
import type { Nodes, RootContent } from "mdast";
import { toString as nodeText } from "mdast-util-to-string";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { fastBlocks, parseBlocks, remarkBlocks } from "../../runner/sam/blocks.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import type { ParseResult } from "../../runner/sam/types.ts";

/** Offset of `end` with the whitespace before it dropped (trailing whitespace is never used). */
function trimmedEnd(body: string, end: number): number {
  let e = end;
  while (e > 0 && /\s/.test(body[e - 1] ?? "")) e--;
  return e;
}

/** Everything sections.ts reads from a node: type, offsets, heading, code, comment, list items. */
function project(body: string, node: Nodes): unknown {
  const out: Record<string, unknown> = {
    type: node.type,
    start: node.position?.start.offset,
    end: trimmedEnd(body, node.position?.end.offset ?? 0),
  };
  if (node.type === "heading") Object.assign(out, { depth: node.depth, text: nodeText(node).trim() });
  if (node.type === "code") Object.assign(out, { lang: node.lang, meta: node.meta, value: node.value });
  if (node.type === "html") out.comment = node.value.trimStart().startsWith("<!--");
  if (node.type === "list" || node.type === "listItem") {
    out.children = node.children.map((child) => project(body, child));
    out.firstColumn = node.children[0]?.position?.start.column;
  }
  return out;
}

const projected = (body: string, nodes: RootContent[]): unknown[] => nodes.map((n) => project(body, n));

/** The fast parse gives what remark gives; false when the body was left to remark. */
function sameAsRemark(body: string): boolean {
  const fast = fastBlocks(body);
  if (fast) expect(projected(body, fast)).toEqual(projected(body, remarkBlocks(body)));
  return fast !== undefined;
}

/** Bodies the fast parse must take, each an edge case of CommonMark block structure. */
const SUPPORTED: Record<string, string> = {
  "empty body": "",
  "blank lines only": "\n\n   \n",
  "no final newline": "# T\n\n## To-do\nDo.",
  "ATX heading variants": "# A #\n## B ##   \n###   C   \n#5 bolts\n#\n####### seven\n# x ###b\n",
  "heading with closing sequence only": "## ##\n### ###   \n",
  "indented ATX heading": "   ## three spaces\n    ## four spaces is code\n",
  "setext headings": "Title\n=====\n\nSub\n---\n\n  Indented\n  ===\n",
  "setext vs thematic break": "para\n---\n\n---\n\n- a\n---\n\n***\n- - -\n_ _ _\n",
  "setext underline after list is a break": "- item\n---\n",
  "fenced code":
    "```\nplain\n```\n\n~~~check timeout=30s\ncmd ~~~\n~~~\n\n````check hidden\n```\nnested fence\n```\n````\n",
  "fence info spacing": "```  check   timeout=5s   hidden  \ncmd\n```\n\n``` \nx\n```\n",
  "fence indentation is stripped": "  ```check\n  two\n    four\n one\nzero\n  ```\n",
  "closing fence rules": "```\na\n``\n   ```\n",
  "closing fence indented four is content": "```\na\n    ```\n```\n",
  "backtick info may not hold backticks": "``` a`b\ntext\n",
  "tilde info may hold backticks": "~~~ a`b\n~~~\n",
  "empty fence": "```check\n```\n",
  "fence with blank lines": "```check\n\na\n\n```\n",
  "indented code": "    code\n      more\n\n    after blank\n\npara\n    not code (continuation)\n",
  "indented code does not interrupt a paragraph": "para\n    still para\n",
  "HTML blocks":
    "<div>\n*x*\n</div>\n\n<!-- one -->\n\n<!--\nmulti\n-->\n  <br>\n<pre>\n\n# not heading\n</pre>\n",
  "HTML type 7 does not interrupt a paragraph": "para\n<custom-tag>\n\n<custom-tag>\nblock\n",
  "indented comment": "   <!-- three -->\n",
  "processing instruction and cdata": "<?php\n?>\n<![CDATA[\nx\n]]>\n<!DOCTYPE html>\n",
  lists: "- a\n- b\n\n* c\n+ d\n\n1. one\n2) two\n3) three\n\n10. ten\n",
  "loose list": "- a\n\n- b\n\n\n- c\n",
  "nested lists": "- a\n  - b\n    - c\n\n      deep para\n  - d\n- e\n",
  "list on the marker line of a list": "- - a\n  - b\n- 1. c\n",
  "empty items": "-\n- \n-\n- x\n-",
  "item starting with a blank line": "-\n  content\n- b\n",
  "item with wide marker spacing": "-    four\n     more\n-     five is code\n",
  "ordered item content column": "1.  x\n    y\n100. z\n     w\n",
  "heading inside a list item": "- # heading\n- item\n  ## heading too\n",
  "setext heading inside a list item": "- item\n  ===\n- x\n  ---\n",
  "fence in list items":
    "- a\n  ```check\n  echo 1\n  ```\n- b\n  ```check timeout=1m\n    indented\n  ```\n  after\n",
  "fence on the marker line": "- ```check\n  cmd\n  ```\n",
  "indented code in a list item": "- a\n\n      code in item\n  para\n- b\n",
  "html in a list item": "- <!-- c -->\n- a\n\n  <div>\n  x\n  </div>\n",
  "link reference definitions are paragraphs": "[a]: /url\n\n[b]: /url\n===\n",
  "trailing spaces": "# T  \n\npara  \nline\n",
  "non-ASCII spaces": "# \u00a0T\u00a0\n```check\u00a0hidden\nx\n```\n```\u2003check\ny\n```\n",
  "thematic breaks": "***\n---\n___\n * * *\n",
  "sub-SAM headings": "# T\n## Sub-SAM: a\n### To-do\nx\n### Expectation\n- y\n",
  "unicode text": "# Ünïcödé 🚀\n\n- 𝔘 item\n  ```check\n  echo 🚀\n  ```\n",
};

/** Bodies the fast parse must leave to remark. */
const UNSUPPORTED: Record<string, string> = {
  tab: "# T\n\n-\tx\n",
  "tab in code": "```\n\tx\n```\n",
  CRLF: "# T\r\n\r\ntext\r\n",
  "lone CR": "# T\rtext\r",
  NUL: "# T\n\0\n",
  "block quote": "> # quoted\n> text\n",
  "block quote in a list": "- a\n  > quote\n",
  "unclosed fence": "# T\n```check\necho\n\n",
  "unclosed fence in a list item": "- a\n  ```check\n  cmd\n\n- b\n",
  "fence ended by a less indented line": "- a\n  ```check\n  cmd\n```\n",
  // micromark reads these differently from CommonMark (and markdown-it): a list item cannot
  // interrupt indented code, even across blank lines, unless it could interrupt a paragraph, and
  // `01.` never interrupts a paragraph.
  "list item after indented code": "    code\n2) x\n",
  "list item after indented code and blank lines": "    code\n\n   \n- \n  x\n",
  "outer list item after indented code in an item": "1. a\n\n       code\n2. b\n",
  "01. after a paragraph": "para\n01. x\n",
  // ... and reads some lazy continuation lines (an HTML tag line) as blocks of the list item.
  "lazy continuation line": "- a\nlazy\n- b\n",
  "lazy HTML line": "2) other\n  <br>\n",
  "line indented 4 but less than the item": "   - three spaces\n    # code heading\n",
  // markdown-it ends a list after an empty item and a blank line; micromark does not.
  "empty item before a blank line": "-\n\n\n- a\n",
  "multi-line setext heading": "two\nlines\n===\n",
  "deep nesting": `${Array.from({ length: 25 }, (_, i) => `${"  ".repeat(i)}- x`).join("\n")}\n`,
};

describe("fast block parse (markdown-it) against remark", () => {
  it.each(Object.entries(SUPPORTED))("%s", (_name, body) => {
    expect(sameAsRemark(body)).toBe(true);
  });

  it.each(Object.entries(UNSUPPORTED))("leaves %s to remark", (_name, body) => {
    expect(fastBlocks(body)).toBeUndefined();
    expect(parseBlocks(body)).toEqual(remarkBlocks(body));
  });

  it("agrees on generated bodies mixing the edge cases", () => {
    const random = seeded(19);
    let fast = 0;
    for (let n = 0; n < 1500; n++) if (sameAsRemark(generatedBody(random))) fast++;
    // Most generated bodies are in the subset (the rest hold block quotes or unclosed fences).
    expect(fast).toBeGreaterThan(750);
  });
});

describe("whole SAMs parse the same with either block parser", () => {
  let reference: (text: string, file: string) => ParseResult;

  beforeAll(async () => {
    // A second copy of the parser whose block parse is always remark's.
    vi.resetModules();
    vi.doMock("../../runner/sam/blocks.ts", async (original) => {
      const blocks = await original<typeof import("../../runner/sam/blocks.ts")>();
      return { ...blocks, parseBlocks: blocks.remarkBlocks };
    });
    reference = (await import("../../runner/sam/parse.ts")).parseSamString;
    vi.doUnmock("../../runner/sam/blocks.ts");
    vi.resetModules();
  });

  const same = (text: string): void => {
    expect(parseSamString(text, "/virtual/task.md")).toEqual(reference(text, "/virtual/task.md"));
  };

  it.each(Object.entries(SUPPORTED))("%s", (_name, body) => {
    same(body);
    same(`---\nname: x\n---\n# Title\n\n## Expectation\n${body}`);
  });

  it("generated SAMs: sections, sub-SAMs, items, checks and diagnostics", () => {
    const random = seeded(7);
    for (let n = 0; n < 400; n++) same(`---\nwalltime: 1h\n---\n# Title\n${generatedBody(random, true)}`);
  });
});

/** A small deterministic PRNG (mulberry32), so a failure can be replayed. */
function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = [
  "",
  "",
  "",
  "plain text",
  "more text  ",
  "  indented text",
  "    code line",
  "      deeper code",
  "# Title",
  "## Context",
  "## To-do",
  "## Expectation",
  "### Expectation",
  "## Sub-SAM: child",
  "### To-do",
  "#### Expectation",
  "## Notes ##",
  "Setext\n===",
  "Setext two\n---",
  "---",
  "***",
  "- - -",
  "- item",
  "- item\n  continued",
  "  - nested item",
  "    - deeper item",
  "1. first",
  "2) other",
  "* star",
  "+ plus",
  "-",
  "-     five spaces",
  "   - three spaces",
  "```check\necho ok\n```",
  "```check timeout=30s\n  make test\n```",
  "- criterion\n  ```check hidden\n  cmp a b\n  ```",
  "- ```check\n  true\n  ```",
  "  ```check\n  two\n  ```",
  "~~~check\n```\n~~~",
  "````\n```\n````",
  "```",
  "~~~",
  "<!-- comment -->",
  "<!--\nmulti\n-->",
  "<div>",
  "</div>",
  "  <br>",
  "- <!-- in item -->",
  "[ref]: /url",
  "#5 not a heading",
  "#",
  "- # heading in item",
  "  ## indented heading",
  "> quote",
  "a\u00a0b",
  "lazy line",
  "0. zero",
  "01. leading zero",
  "3. three",
  "  1. indented one",
  "      - six spaces",
  "- a\n\n  b",
  "- a\n\n\n  b",
  "  continued two",
  "   continued three",
  "`````check\nx\n`````",
  "  ~~~\n  y\n  ~~~",
  "- item\n  - nested\n    ```check\n    deep\n    ```",
  "1. a\n   ```check timeout=2m hidden\n   b\n   ```",
  "<pre>\n\ntext\n</pre>",
  "<script>\n</script>",
  "<?x?>",
  "<custom-tag>",
  "</span>",
  "- <div>\n  x\n  </div>",
  "====",
  "   ---",
  "* * *",
  "_____",
  "    # code heading",
  "# Heading #",
  "##No space",
  "###### Six",
];

function generatedBody(random: () => number, withSections = false): string {
  const lines: string[] = [];
  const count = 3 + Math.floor(random() * 14);
  for (let i = 0; i < count; i++) {
    if (withSections && random() < 0.2) {
      lines.push(
        ["## To-do", "## Expectation", "## Context", "## Sub-SAM: s", "### Expectation"][
          Math.floor(random() * 5)
        ] as string,
      );
    }
    lines.push(FRAGMENTS[Math.floor(random() * FRAGMENTS.length)] as string);
  }
  return `${lines.join("\n")}${random() < 0.8 ? "\n" : ""}`;
}
