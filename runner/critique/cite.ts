// The deterministic half of the critique: every citation of the tracer and the critique is checked
// against the final task folder on the host, the way the runner reads task files (one component at a
// time, O_NOFOLLOW; links followed only while they stay inside the folder, and recorded; no FIFO,
// socket or device; a window of the first MAX_CITED_BYTES of a larger file). A citation verifies when
// the lines exist and the quote stands in their code (comments removed), whitespace normalised; a
// trace entry's expression and a finding's `code` must stand on one of its verified citations too.
import { lstatSync, readlinkSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { readTaskFileWindow } from "../policy/host-paths.ts";
import {
  type CheckedFinding,
  type Citation,
  type CitationCheck,
  type Finding,
  type Trace,
  traceKey,
} from "./schema.ts";

/**
 * Most bytes of a cited file the runner reads: a larger file is read up to here (a window from its
 * start), and a citation past the window does not verify and says it was the file's size.
 */
export const MAX_CITED_BYTES = 2 * 1024 * 1024;
/** A citation spanning more lines than this does not verify: it would show a whole file as "the code". */
export const MAX_CITED_LINES = 40;
/** Longest line kept in a record or shown to the critique (the rest is said to be cut). */
export const MAX_LINE_CHARS = 400;
/** Most links followed for one cited path (each must stay inside the task folder). */
const MAX_LINK_HOPS = 8;

/** Collapses every run of whitespace to one space and trims: a quote may wrap differently. */
export function normaliseSpace(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** A line cut to MAX_LINE_CHARS, saying so. */
export function cutLine(text: string): string {
  return text.length > MAX_LINE_CHARS
    ? `${text.slice(0, MAX_LINE_CHARS)} [line cut at ${MAX_LINE_CHARS} chars]`
    : text;
}

/** One task file as the check round read it: raw lines, and per line its code (comments out), normalised. */
export interface ReadFile {
  lines: string[];
  /** Each line's code with comments removed (codeOfLines), whitespace normalised: computed once per round. */
  code: string[];
  /** The path inside the task folder the cited path is a link to (recorded; citations of it still verify). */
  link?: string;
  /** Set when the file was larger than MAX_CITED_BYTES: only lines up to `lines.length` were read. */
  window?: boolean;
}

/**
 * Why a file could not be read. `shape`: the reason is the folder's shape the work agent controls (a
 * link out of the folder, a FIFO, a file past the window), not the model's citation: under block and
 * approve a likely mismatch resting on such a citation does not let the PASS stand silently.
 */
export interface ReadProblem {
  problem: string;
  shape?: boolean;
}

/** Reads task files once per check round; a file that cannot be read is remembered with why. */
export class TaskFileReader {
  readonly #taskDir: string;
  readonly #files = new Map<string, ReadFile | ReadProblem>();
  readonly #spans = new Map<string, string>();
  constructor(taskDir: string) {
    this.#taskDir = taskDir;
  }

  lines(file: string): ReadFile | ReadProblem {
    let got = this.#files.get(file);
    if (got === undefined) {
      got = this.#read(file);
      this.#files.set(file, got);
    }
    return got;
  }

  /** The normalised code of lines from..to (1-based) of a read file, joined; cached per round. */
  span(file: string, read: ReadFile, from: number, to: number): string {
    const key = `${file}\0${from}\0${to}`;
    let got = this.#spans.get(key);
    if (got === undefined) {
      got = read.code
        .slice(from - 1, to)
        .filter((l) => l !== "")
        .join(" ");
      this.#spans.set(key, got);
    }
    return got;
  }

  #read(file: string): ReadFile | ReadProblem {
    if (file.startsWith("/")) return { problem: "an absolute path; cite paths relative to the task folder" };
    if (file.includes("\0")) return { problem: "a NUL byte in the path" };
    const resolved = resolveInside(this.#taskDir, file);
    if ("problem" in resolved) return resolved;
    try {
      const { bytes, window } = readTaskFileWindow(this.#taskDir, resolved.rel, file, MAX_CITED_BYTES);
      let lines = bytes.toString("utf8").split("\n");
      // A window ends mid-line: that last, partial line is not the file's line.
      if (window) lines = lines.slice(0, -1);
      return {
        lines,
        code: codeOfLines(file, lines).map(normaliseSpace),
        ...(resolved.rel !== normalisedRel(file) ? { link: resolved.rel } : {}),
        ...(window ? { window: true } : {}),
      };
    } catch (error) {
      return { problem: error instanceof Error ? error.message : String(error), shape: true };
    }
  }
}

function normalisedRel(file: string): string {
  return file
    .split("/")
    .filter((p) => p !== "" && p !== ".")
    .join("/");
}

/**
 * The path a cited path names inside the task folder, following links (lstat and readlink, one
 * component at a time) only while they stay inside it. The read after it opens the result with
 * O_NOFOLLOW again, so a link swapped in between is refused, not followed.
 */
export function resolveInside(taskDir: string, file: string): { rel: string } | ReadProblem {
  let pending = file.split("/").filter((p) => p !== "" && p !== ".");
  // A cited path names its file plainly; only a link's target may climb (and must stay inside).
  if (pending.includes("..")) return { problem: "'..' may not leave the task folder" };
  const done: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift() as string;
    if (part === "..") {
      if (done.length === 0) return { problem: "'..' may not leave the task folder", shape: true };
      done.pop();
      continue;
    }
    const here = join(taskDir, ...done, part);
    let stat: ReturnType<typeof lstatSync> | undefined;
    try {
      stat = lstatSync(here);
    } catch {
      return { problem: `no such file in the task folder: ${[...done, part].join("/")}` };
    }
    if (!stat.isSymbolicLink()) {
      done.push(part);
      continue;
    }
    if (++hops > MAX_LINK_HOPS) return { problem: `more than ${MAX_LINK_HOPS} links`, shape: true };
    const target = readlinkSync(here);
    if (target.startsWith("/")) {
      const inside = relative(resolve(taskDir), target);
      if (inside.startsWith("..") || inside.startsWith("/"))
        return { problem: `a link to ${target}, outside the task folder`, shape: true };
      done.length = 0;
      pending = [...inside.split("/").filter((p) => p !== ""), ...pending];
    } else pending = [...target.split("/").filter((p) => p !== "" && p !== "."), ...pending];
  }
  if (done.length === 0) return { problem: "this is the task folder itself, not a file" };
  return { rel: done.join("/") };
}

type CommentStyle = { line: string[]; block?: [string, string] };
const HASH: CommentStyle = { line: ["#"] };
const C_LIKE: CommentStyle = { line: ["//"], block: ["/*", "*/"] };
const STYLES: Record<string, CommentStyle> = {
  py: HASH,
  sh: HASH,
  bash: HASH,
  r: HASH,
  jl: HASH,
  pl: HASH,
  rb: HASH,
  cmake: HASH,
  yaml: HASH,
  yml: HASH,
  toml: HASH,
  c: C_LIKE,
  h: C_LIKE,
  cc: C_LIKE,
  cpp: C_LIKE,
  cxx: C_LIKE,
  hpp: C_LIKE,
  hh: C_LIKE,
  cu: C_LIKE,
  js: C_LIKE,
  mjs: C_LIKE,
  ts: C_LIKE,
  java: C_LIKE,
  rs: C_LIKE,
  go: C_LIKE,
  scala: C_LIKE,
  kt: C_LIKE,
  swift: C_LIKE,
  f: { line: ["!"] },
  f90: { line: ["!"] },
  f95: { line: ["!"] },
  f03: { line: ["!"] },
  f08: { line: ["!"] },
  m: { line: ["%"] },
  tex: { line: ["%"] },
};

/**
 * Each line's code with its comments removed, by the file's extension (`#` Python, shell, R; `//`
 * and `/* *\/` C-like; `!` Fortran; `%` MATLAB): a quote standing only in a comment is not code.
 * Quotes ('...' and "...") are followed within a line so a marker inside a string stays code; a file
 * of another kind is taken as it is.
 */
export function codeOfLines(file: string, lines: readonly string[]): string[] {
  const ext = (file.split("/").pop() ?? "").split(".").slice(1).pop()?.toLowerCase() ?? "";
  const style = STYLES[ext] ?? (file.endsWith("Makefile") ? HASH : undefined);
  if (!style) return [...lines];
  let inBlock = false;
  return lines.map((line) => {
    let out = "";
    let quote = "";
    for (let i = 0; i < line.length; i++) {
      const ch = line[i] as string;
      if (inBlock) {
        if (style.block && line.startsWith(style.block[1], i)) {
          inBlock = false;
          i += style.block[1].length - 1;
          out += " ";
        }
        continue;
      }
      if (quote) {
        out += ch;
        if (ch === "\\") {
          out += line[i + 1] ?? "";
          i++;
        } else if (ch === quote) quote = "";
        continue;
      }
      if (ch === '"' || ch === "'") {
        quote = ch;
        out += ch;
        continue;
      }
      if (style.line.some((m) => line.startsWith(m, i))) break;
      if (style.block && line.startsWith(style.block[0], i)) {
        inBlock = true;
        i += style.block[0].length - 1;
        continue;
      }
      out += ch;
    }
    return out;
  });
}

/** Checks one citation against the task folder: the file, the lines, the quote in their code. */
export function checkCitation(reader: TaskFileReader, citation: Citation): CitationCheck {
  const read = reader.lines(citation.file);
  if ("problem" in read)
    return { citation, verified: false, problem: read.problem, ...(read.shape ? { shape: true } : {}) };
  const link = read.link ? { link: read.link } : {};
  const last = citation.end_line ?? citation.line;
  if (last < citation.line) return { citation, verified: false, problem: "end_line is before line", ...link };
  if (last - citation.line + 1 > MAX_CITED_LINES)
    return { citation, verified: false, problem: `spans more than ${MAX_CITED_LINES} lines`, ...link };
  // A file ending in a newline has an empty last "line" after the split: not a line of the file.
  const count = !read.window && read.lines.at(-1) === "" ? read.lines.length - 1 : read.lines.length;
  if (citation.line > count)
    return read.window
      ? {
          citation,
          verified: false,
          problem: `past the first ${MAX_CITED_BYTES} bytes of a larger file (${count} line(s) read)`,
          shape: true,
          ...link,
        }
      : {
          citation,
          verified: false,
          problem: `the file has ${count} line(s), not line ${citation.line}`,
          ...link,
        };
  const to = Math.min(last, count);
  const lines = read.lines
    .slice(citation.line - 1, to)
    .map((text, i) => ({ n: citation.line + i, text: cutLine(text) }));
  if (to < last)
    return {
      citation,
      verified: false,
      lines,
      problem: read.window
        ? `past the first ${MAX_CITED_BYTES} bytes of a larger file`
        : `the file has ${count} line(s), not line ${last}`,
      ...(read.window ? { shape: true } : {}),
      ...link,
    };
  const quote = normaliseSpace(citation.quote);
  const held = reader.span(citation.file, read, citation.line, to);
  if (quote === "" || !held.includes(quote))
    return {
      citation,
      verified: false,
      lines,
      problem: "the quoted expression is not on the cited line(s)",
      ...link,
    };
  return { citation, verified: true, lines, ...link };
}

/** Whether `expression` (normalised) stands in the code of a verified citation's lines. */
function holds(reader: TaskFileReader, check: CitationCheck, expression: string): boolean {
  if (!check.verified) return false;
  const read = reader.lines(check.citation.file);
  if ("problem" in read) return false;
  const c = check.citation;
  return reader.span(c.file, read, c.line, c.end_line ?? c.line).includes(normaliseSpace(expression));
}

/**
 * A trace entry's citations, checked: each on its own, then the entry's expression must stand on one
 * of the verified ones, or none verifies (a one-letter quote must not make a false expression shown).
 */
function checkEntry(reader: TaskFileReader, expression: string, refs: readonly Citation[]): CitationCheck[] {
  const checks = refs.map((c) => checkCitation(reader, c));
  if (checks.some((c) => holds(reader, c, expression))) return checks;
  return checks.map((c) =>
    c.verified
      ? { ...c, verified: false, problem: "the entry's expression is not in the code of its cited line(s)" }
      : c,
  );
}

/** Every trace entry's citations, checked, by entry key (`item:<id>`, `quantity:<name>`). */
export function checkTrace(reader: TaskFileReader, trace: Trace): Record<string, CitationCheck[]> {
  const out: Record<string, CitationCheck[]> = {};
  for (const item of trace.items)
    out[traceKey("item", item.item)] = checkEntry(reader, item.expression, item.refs);
  for (const q of trace.quantities)
    out[traceKey("quantity", q.name)] = checkEntry(reader, q.definition, q.refs);
  return out;
}

/**
 * A finding with the citations it rests on: those of the trace entries it names (an item id, else a
 * quantity name) and its own. Verified when at least one of them verified; a finding that names no
 * trace entry with a citation and has none of its own rests on nothing the runner can check.
 */
export function checkFinding(
  reader: TaskFileReader,
  finding: Finding,
  traceChecks: Record<string, CitationCheck[]>,
): CheckedFinding {
  const fromTrace = finding.trace.flatMap(
    (entry) => traceChecks[traceKey("item", entry)] ?? traceChecks[traceKey("quantity", entry)] ?? [],
  );
  const own = finding.refs.map((c) => checkCitation(reader, c));
  const citations = [...fromTrace, ...own];
  // What the finding says the code does must stand on one of its verified lines, like an expression.
  return { ...finding, citations, verified: citations.some((c) => holds(reader, c, finding.code)) };
}
