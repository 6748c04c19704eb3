// The deterministic half of the critique: every citation of the tracer and the critique is checked
// against the final task folder on the host, the way the runner reads task files (no link followed,
// one component at a time; no FIFO, socket or device; bounded). A citation verifies when the file is
// a regular file there, the lines exist, and the quoted expression stands on them, whitespace
// normalised. A finding that rests only on citations that do not verify is marked unverified.
import { readTaskFile } from "../policy/host-paths.ts";
import {
  type CheckedFinding,
  type Citation,
  type CitationCheck,
  type Finding,
  type Trace,
  traceKey,
} from "./schema.ts";

/** A cited file larger than this is not read (the citation does not verify, and says why). */
export const MAX_CITED_BYTES = 2 * 1024 * 1024;
/** A citation spanning more lines than this does not verify: it would show a whole file as "the code". */
export const MAX_CITED_LINES = 40;
/** Longest line kept in a record (the report shows it; the rest is said to be cut). */
const MAX_LINE_CHARS = 400;

/** Collapses every run of whitespace to one space and trims: a quote may wrap differently. */
export function normaliseSpace(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Reads task files once per check round; a file that cannot be read is remembered with why. */
export class TaskFileReader {
  readonly #taskDir: string;
  readonly #files = new Map<string, { lines: string[] } | { problem: string }>();
  constructor(taskDir: string) {
    this.#taskDir = taskDir;
  }

  lines(file: string): { lines: string[] } | { problem: string } {
    let got = this.#files.get(file);
    if (got === undefined) {
      got = this.#read(file);
      this.#files.set(file, got);
    }
    return got;
  }

  #read(file: string): { lines: string[] } | { problem: string } {
    if (file.startsWith("/")) return { problem: "an absolute path; cite paths relative to the task folder" };
    if (file.includes("\0")) return { problem: "a NUL byte in the path" };
    try {
      const bytes = readTaskFile(this.#taskDir, file, file, MAX_CITED_BYTES);
      return { lines: bytes.toString("utf8").split("\n") };
    } catch (error) {
      return { problem: error instanceof Error ? error.message : String(error) };
    }
  }
}

/** Checks one citation against the task folder. */
export function checkCitation(reader: TaskFileReader, citation: Citation): CitationCheck {
  const read = reader.lines(citation.file);
  if ("problem" in read) return { citation, verified: false, problem: read.problem };
  const last = citation.end_line ?? citation.line;
  if (last < citation.line) return { citation, verified: false, problem: "end_line is before line" };
  if (last - citation.line + 1 > MAX_CITED_LINES)
    return { citation, verified: false, problem: `spans more than ${MAX_CITED_LINES} lines` };
  // A file ending in a newline has an empty last "line" after the split: not a line of the file.
  const count = read.lines.at(-1) === "" ? read.lines.length - 1 : read.lines.length;
  if (citation.line > count)
    return { citation, verified: false, problem: `the file has ${count} line(s), not line ${citation.line}` };
  const to = Math.min(last, count);
  const lines = read.lines.slice(citation.line - 1, to).map((text, i) => ({
    n: citation.line + i,
    text:
      text.length > MAX_LINE_CHARS
        ? `${text.slice(0, MAX_LINE_CHARS)} [line cut at ${MAX_LINE_CHARS} chars]`
        : text,
  }));
  if (to < last)
    return { citation, verified: false, lines, problem: `the file has ${count} line(s), not line ${last}` };
  const quote = normaliseSpace(citation.quote);
  const held = normaliseSpace(read.lines.slice(citation.line - 1, to).join("\n"));
  if (quote === "" || !held.includes(quote))
    return { citation, verified: false, lines, problem: "the quoted expression is not on the cited line(s)" };
  return { citation, verified: true, lines };
}

/** Every trace entry's citations, checked, by entry key (`item:<id>`, `quantity:<name>`). */
export function checkTrace(reader: TaskFileReader, trace: Trace): Record<string, CitationCheck[]> {
  const out: Record<string, CitationCheck[]> = {};
  for (const item of trace.items)
    out[traceKey("item", item.item)] = item.refs.map((c) => checkCitation(reader, c));
  for (const q of trace.quantities)
    out[traceKey("quantity", q.name)] = q.refs.map((c) => checkCitation(reader, c));
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
  return { ...finding, citations, verified: citations.some((c) => c.verified) };
}
