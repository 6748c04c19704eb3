// Sections from the Markdown AST (mdast, from blocks.ts), never by pattern-matching lines: the title heading
// opens the SAM, its sections are exactly one level deeper, and a `Sub-SAM: name` heading at that
// level opens a nested SAM whose sections are one level deeper again, to any depth. Section text is
// sliced from the source by AST offsets, so it is verbatim.
import type { Code, Heading, List, ListItem, Nodes, RootContent } from "mdast";
import { toString as nodeText } from "mdast-util-to-string";
import { parseBlocks } from "./blocks.ts";
import { isCheckFence, readCheck } from "./check-blocks.ts";
import type { DiagnosticSink } from "./diagnostics.ts";
import { closest } from "./suggest.ts";
import type { ExpectationItem, SamNode } from "./types.ts";

export type SectionKind = "context" | "todo" | "expectation";

/** Heading names (normalised: lower case, single spaces, no trailing colon) and what they mean. */
export const SECTION_ALIASES: Readonly<Record<string, SectionKind>> = {
  context: "context",
  background: "context",
  "to-do": "todo",
  todo: "todo",
  "to do": "todo",
  task: "todo",
  tasks: "todo",
  expectation: "expectation",
  expectations: "expectation",
  acceptance: "expectation",
  "acceptance criteria": "expectation",
};

export const SECTION_TITLES: Readonly<Record<SectionKind, string>> = {
  context: "Context",
  todo: "To-do",
  expectation: "Expectation",
};

/** `Sub-SAM: name`, `SubSAM: name`, `Subtask: name`, `Sub-task: name` (any case). */
const SUB_SAM_HEADING = /^sub[- ]?(?:sam|task)\s*:\s*(.*)$/i;

type HeadingClass =
  | { kind: "section"; section: SectionKind }
  | { kind: "sub"; name: string }
  | { kind: "other" };

interface Walk {
  body: string;
  bodyStart: number;
  sink: DiagnosticSink;
  nodes: RootContent[];
}

const startOf = (node: Nodes): number => node.position?.start.offset ?? 0;
const endOf = (node: Nodes): number => node.position?.end.offset ?? 0;
const hashes = (depth: number): string => "#".repeat(Math.min(depth, 6));

/** Lower case, single spaces, no trailing `:` or `.`, no emphasis or code marks around it. */
export function normaliseHeading(text: string): string {
  return text
    .trim()
    .replace(/^[*_`]+|[*_`]+$/g, "")
    .toLowerCase()
    .replace(/\s+/g, " ")
    .replace(/[:.]$/, "")
    .trim();
}

function classify(heading: Heading): HeadingClass {
  const text = nodeText(heading).trim();
  const sub = SUB_SAM_HEADING.exec(text);
  if (sub) return { kind: "sub", name: (sub[1] ?? "").trim() };
  const section = SECTION_ALIASES[normaliseHeading(text)];
  return section ? { kind: "section", section } : { kind: "other" };
}

const isComment = (node: RootContent): boolean =>
  node.type === "html" && node.value.trimStart().startsWith("<!--");

/** Parses the Markdown body of one SAM file into its root SamNode (ids assigned by `assignIds`). */
export function parseBody(
  body: string,
  bodyStart: number,
  file: string,
  sink: DiagnosticSink,
): SamNode | undefined {
  const walk: Walk = { body, bodyStart, sink, nodes: parseBlocks(body) };
  const { nodes } = walk;
  const first = nodes.findIndex((n) => n.type === "heading");
  const stray = nodes.slice(0, first === -1 ? nodes.length : first).find((n) => !isComment(n));
  if (first === -1) {
    sink.error(
      bodyStart + (stray ? startOf(stray) : 0),
      "no title heading; a SAM is a title heading (e.g. `# Fit a Gaussian`) followed by `## To-do` and `## Expectation` sections",
    );
    return undefined;
  }
  const title = nodes[first] as Heading;
  if (stray) reportTextBeforeTitle(walk, stray, title);
  let parsed: { node: SamNode; end: number; depth: number };
  if (!isMisplacedSection(nodes, first)) {
    parsed = parseSam(walk, first + 1, title.depth, nodeText(title).trim(), title, file);
  } else {
    parsed = parseMisplacedStart(walk, first, title, file);
  }
  const next = nodes[parsed.end];
  if (next?.type === "heading") {
    sink.error(
      bodyStart + startOf(next),
      `second top-level heading \`${nodeText(next).trim()}\`: a SAM file holds one SAM; make it \`${hashes(parsed.depth + 1)} Sub-SAM: ${nodeText(next).trim()}\` or move it to its own file listed under \`subtasks\``,
    );
  }
  return parsed.node;
}

/**
 * The first heading is the title, even when its text is a section name (`# Task`), unless it is a
 * section or sub-SAM heading followed by a shallower heading (the real title comes later) or by a
 * sibling section heading at its own level (the title is missing).
 */
function isMisplacedSection(nodes: RootContent[], first: number): boolean {
  const heading = nodes[first] as Heading;
  if (classify(heading).kind === "other") return false;
  return nodes.some(
    (n, i) =>
      i > first &&
      n.type === "heading" &&
      (n.depth < heading.depth || (n.depth === heading.depth && classify(n).kind !== "other")),
  );
}

/**
 * The first heading is a section (or sub-SAM), so it belongs to no SAM. If a real title follows at
 * a shallower level, the SAM is read from there; otherwise the headings are read as an untitled SAM
 * so that the rest of the file is still checked.
 */
function parseMisplacedStart(
  walk: Walk,
  first: number,
  heading: Heading,
  file: string,
): { node: SamNode; end: number; depth: number } {
  const titleIndex = walk.nodes.findIndex(
    (n, i) => i > first && n.type === "heading" && n.depth < heading.depth && classify(n).kind === "other",
  );
  const what = classify(heading).kind === "sub" ? "sub-SAM heading" : "section";
  const text = nodeText(heading).trim();
  const offset = walk.bodyStart + startOf(heading);
  if (titleIndex !== -1) {
    const title = walk.nodes[titleIndex] as Heading;
    walk.sink.error(
      offset,
      `${what} \`${text}\` is outside any SAM: it comes before the title heading \`${nodeText(title).trim()}\` (line ${walk.sink.position(walk.bodyStart + startOf(title)).line}); move it below the title`,
    );
    return parseSam(walk, titleIndex + 1, title.depth, nodeText(title).trim(), title, file);
  }
  walk.sink.error(
    offset,
    `${what} \`${text}\` is outside any SAM: a SAM starts with a title heading (e.g. \`${hashes(Math.max(1, heading.depth - 1))} Fit a Gaussian\`) and its sections are one level below it`,
  );
  return parseSam(walk, first, heading.depth - 1, "(untitled)", heading, file);
}

function reportTextBeforeTitle(walk: Walk, stray: RootContent, title: Heading): void {
  const hint =
    stray.type === "thematicBreak"
      ? "; front matter must start with `---` on the very first line of the file"
      : `; move it under a \`${hashes(title.depth + 1)} Context\` section`;
  walk.sink.error(
    walk.bodyStart + startOf(stray),
    `text before the title heading \`${nodeText(title).trim()}\` belongs to no section${hint}`,
  );
}

/** One SAM (root or nested): from `start` up to the next heading at `depth` or shallower. */
function parseSam(
  walk: Walk,
  start: number,
  depth: number,
  title: string,
  heading: Heading,
  file: string,
): { node: SamNode; end: number; depth: number } {
  const { nodes, sink, bodyStart } = walk;
  const headingOffset = bodyStart + startOf(heading);
  const node: SamNode = {
    id: "",
    title,
    todo: "",
    expectation: "",
    items: [],
    children: [],
    source: { file, line: sink.position(headingOffset).line },
  };
  const seen = new Map<SectionKind, number>();
  /** Sections already reported as misplaced or misspelt: not reported again as missing. */
  const reported = new Set<SectionKind>();
  let straySeen = false;
  let i = start;
  while (i < nodes.length) {
    const current = nodes[i] as RootContent;
    if (current.type === "heading" && current.depth <= depth) break;
    if (current.type === "heading" && current.depth === depth + 1) {
      const cls = classify(current);
      if (cls.kind === "sub") {
        if (cls.name === "")
          sink.error(
            bodyStart + startOf(current),
            `sub-SAM heading needs a name, e.g. \`${hashes(current.depth)} Sub-SAM: build the model\``,
          );
        if (current.depth >= 6) {
          sink.error(
            bodyStart + startOf(current),
            `sub-SAM \`${cls.name}\` is a level 6 heading, so its sections would need level 7, which Markdown does not have; move it into its own file and list that file under \`subtasks\``,
          );
        }
        const child = parseSam(walk, i + 1, depth + 1, cls.name, current, file);
        node.children.push(child.node);
        i = child.end;
        continue;
      }
      const end = spanEnd(nodes, i + 1, depth + 1);
      if (cls.kind === "section") readSection(walk, node, { seen, reported }, cls.section, i, end, depth);
      else {
        const meant = reportUnknownSection(walk, current, title);
        if (meant) reported.add(meant);
      }
      i = end;
      continue;
    }
    const misplaced = current.type === "heading" ? classify(current) : undefined;
    if (current.type === "heading" && misplaced && misplaced.kind !== "other") {
      reportWrongLevel(walk, current, title, depth, undefined);
      if (misplaced.kind === "section") reported.add(misplaced.section);
      // The misplaced heading's own text is covered by this error.
      i = spanEnd(nodes, i + 1, current.depth);
      continue;
    } else if (!straySeen && !isComment(current)) {
      straySeen = true;
      sink.error(
        bodyStart + startOf(current),
        `text in \`${title}\` outside its sections belongs to no section; put it under \`${hashes(depth + 1)} Context\` or \`${hashes(depth + 1)} To-do\``,
      );
    }
    i++;
  }
  for (const required of ["todo", "expectation"] as const) {
    if (!seen.has(required) && !reported.has(required) && depth < 6) {
      sink.error(
        headingOffset,
        `SAM \`${title}\` has no ${SECTION_TITLES[required]} section; add \`${hashes(depth + 1)} ${SECTION_TITLES[required]}\` ${required === "todo" ? "saying what to do" : "listing what must be true when it is done"}`,
      );
    }
  }
  return { node, end: i, depth };
}

/** Index of the next top-level heading at `depth` or shallower (or the end). */
function spanEnd(nodes: RootContent[], from: number, depth: number): number {
  let i = from;
  while (i < nodes.length) {
    const n = nodes[i] as RootContent;
    if (n.type === "heading" && n.depth <= depth) break;
    i++;
  }
  return i;
}

/** Reports an unknown section heading; returns the section it probably meant, if any. */
function reportUnknownSection(walk: Walk, heading: Heading, title: string): SectionKind | undefined {
  const text = nodeText(heading).trim();
  const suggestion = closest(normaliseHeading(text), Object.keys(SECTION_ALIASES));
  const meant = suggestion ? SECTION_ALIASES[suggestion] : undefined;
  const hint = meant ? `did you mean \`${SECTION_TITLES[meant]}\`? ` : "";
  walk.sink.error(
    walk.bodyStart + startOf(heading),
    `unknown section \`${text}\` in \`${title}\`; ${hint}sections are Context, To-do and Expectation (or \`Sub-SAM: name\`); for a sub-heading inside a section use a deeper level (\`${hashes(heading.depth + 1)} ${text}\`)`,
  );
  return meant;
}

function reportWrongLevel(
  walk: Walk,
  heading: Heading,
  title: string,
  depth: number,
  inside: string | undefined,
): void {
  const text = nodeText(heading).trim();
  const what = classify(heading).kind === "sub" ? "sub-SAM heading" : "section heading";
  const where = inside
    ? ` is inside the ${inside} section of \`${title}\``
    : ` is a level ${heading.depth} heading`;
  walk.sink.error(
    walk.bodyStart + startOf(heading),
    `${what} \`${text}\`${where}: sections and sub-SAMs of \`${title}\` are level ${depth + 1} headings (\`${hashes(depth + 1)} ${text}\`); a sub-SAM's own sections go under its \`${hashes(depth + 1)} Sub-SAM: name\` heading`,
  );
}

function readSection(
  walk: Walk,
  node: SamNode,
  found: { seen: Map<SectionKind, number>; reported: Set<SectionKind> },
  kind: SectionKind,
  headingIndex: number,
  end: number,
  depth: number,
): void {
  const { nodes, sink, bodyStart, body } = walk;
  const heading = nodes[headingIndex] as Heading;
  const offset = bodyStart + startOf(heading);
  const { seen, reported } = found;
  const first = seen.get(kind);
  if (first !== undefined) {
    sink.error(
      offset,
      `duplicate ${SECTION_TITLES[kind]} section in \`${node.title}\` (first at line ${first}); merge them into one`,
    );
    return;
  }
  seen.set(kind, sink.position(offset).line);
  const span = nodes.slice(headingIndex + 1, end);
  for (const inner of span) {
    const innerClass = inner.type === "heading" ? classify(inner) : undefined;
    if (inner.type === "heading" && innerClass && innerClass.kind !== "other") {
      reportWrongLevel(walk, inner, node.title, depth, SECTION_TITLES[kind]);
      if (innerClass.kind === "section") reported.add(innerClass.section);
    }
  }
  const boundary = end < nodes.length ? startOf(nodes[end] as RootContent) : body.length;
  const text = trimBlankLines(body.slice(endOf(heading), boundary));
  if (kind === "expectation") {
    node.expectation = text;
    node.items = readItems(walk, span, text, node.title);
  } else {
    for (const check of findChecks(span)) {
      sink.error(
        bodyStart + startOf(check),
        `a \`check\` block in the ${SECTION_TITLES[kind]} section would never run; put it under an item of the Expectation section`,
      );
    }
    if (kind === "todo") node.todo = text;
    else node.context = text;
  }
  if (text === "" && kind !== "context") {
    sink.error(
      offset,
      kind === "expectation"
        ? `empty Expectation in \`${node.title}\`; list what must be true when the task is done (one item per criterion, optionally with a \`check\` block)`
        : `empty To-do in \`${node.title}\`; say what the agent should do`,
    );
  }
}

/** Removes leading blank lines and trailing whitespace; everything in between stays as written. */
function trimBlankLines(text: string): string {
  return text.replace(/^(?:[^\S\n]*\n)+/, "").trimEnd();
}

function findChecks(nodes: readonly Nodes[]): Code[] {
  const found: Code[] = [];
  const visit = (n: Nodes): void => {
    if (n.type === "code" && isCheckFence(n.lang)) found.push(n);
    if ("children" in n) for (const child of n.children) visit(child);
  };
  for (const n of nodes) visit(n);
  return found;
}

/** Expectation items: each top-level list item; without a list, the whole section is one item. */
function readItems(walk: Walk, span: RootContent[], sectionText: string, title: string): ExpectationItem[] {
  const lists = span.filter((n): n is List => n.type === "list");
  const looseChecks = findChecks(span.filter((n) => n.type !== "list"));
  if (lists.length === 0) {
    if (sectionText === "") return [];
    const first = span[0];
    const sectionStart = first ? startOf(first) : 0;
    return [
      {
        id: "",
        text: cutChecks(
          walk.body,
          sectionStart,
          first ? endOf(span[span.length - 1] as RootContent) : 0,
          looseChecks,
          1,
        ),
        checks: looseChecks.map((c) => readCheck(walk.sink, walk.bodyStart + startOf(c), c)),
        line: walk.sink.position(walk.bodyStart + sectionStart).line,
      },
    ];
  }
  for (const check of looseChecks) {
    walk.sink.error(
      walk.bodyStart + startOf(check),
      `\`check\` block in the Expectation of \`${title}\` is not under a list item; indent it under the item it verifies`,
    );
  }
  return lists.flatMap((list) => list.children.map((item) => readItem(walk, item)));
}

function readItem(walk: Walk, item: ListItem): ExpectationItem {
  const line = walk.sink.position(walk.bodyStart + startOf(item)).line;
  const first = item.children[0];
  if (!first) {
    walk.sink.error(
      walk.bodyStart + startOf(item),
      "empty Expectation item; write the criterion after the bullet",
    );
    return { id: "", text: "", checks: [], line };
  }
  const checks = findChecks(item.children);
  const column = first.position?.start.column ?? 1;
  return {
    id: "",
    text: cutChecks(walk.body, startOf(first), endOf(item), checks, column),
    checks: checks.map((c) => readCheck(walk.sink, walk.bodyStart + startOf(c), c)),
    line,
  };
}

/** Source text between two offsets without the check blocks, continuation lines dedented. */
function cutChecks(body: string, from: number, to: number, checks: readonly Code[], column: number): string {
  let text = "";
  let cursor = from;
  for (const check of checks) {
    text += body.slice(cursor, startOf(check));
    cursor = endOf(check);
  }
  text += body.slice(cursor, to);
  const indent = new RegExp(`^ {0,${Math.max(0, column - 1)}}`);
  const lines = text.split("\n").map((l, i) => (i === 0 ? l : l.replace(indent, "")));
  return trimBlankLines(lines.join("\n").replace(/\n(?:[^\S\n]*\n){2,}/g, "\n\n"));
}

/** Ids in document order: `root`, `root/1`, `root/1/2`; items `<node>/e<n>`, checks `<node>/check-<n>`. */
export function assignIds(node: SamNode, id = "root"): void {
  node.id = id;
  let checkOrdinal = 0;
  node.items.forEach((item, k) => {
    item.id = `${id}/e${k + 1}`;
    for (const check of item.checks) check.id = `${id}/check-${++checkOrdinal}`;
  });
  node.children.forEach((child, k) => {
    assignIds(child, `${id}/${k + 1}`);
  });
}
