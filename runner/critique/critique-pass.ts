// One critique of a node that passed (the phase, phases/critique.ts, and `scifi critique <run>`):
// the tracer in a fresh read-only sandbox on the final task folder, its citations checked host-side,
// the critique with the cited code as evidence, its findings checked the same way. The record says
// what was verified and what was not; what it does to the verdict is the caller's (the mode's).

import type { Model, ModelRequest, ModelResponse } from "../llm/types.ts";
import { fenceBlock, inlineText } from "../markdown-quote.ts";
import type { SamNode } from "../sam/types.ts";
import type { Sandbox } from "../sandbox/types.ts";
import { CODE_SHARE, type CritiqueFailed, runCritique, runTracer, type TracerAnswer } from "./agent.ts";
import { checkFinding, checkTrace, cutLine, TaskFileReader } from "./cite.ts";
import { specItems } from "./items.ts";
import type { CritiqueMode, CritiqueRecord, Trace } from "./schema.ts";

/** A domain pack's critique context as it goes into the prompt (runner/skills: `critique_context`). */
export interface CritiquePack {
  name: string;
  text: string;
  sha256: string;
}

export interface CritiqueOptions {
  node: SamNode;
  iteration: number;
  mode: CritiqueMode;
  /** The final task folder (read host-side for the citations; the tracer's sandbox mounts it read-only). */
  taskDir: string;
  model: Model;
  packs: readonly CritiquePack[];
  rank: number;
  meta: ModelRequest["meta"];
  openSandbox(): Promise<Sandbox>;
  /** One tracer conversation with read-only tools in that sandbox. */
  converse(brief: string, sandbox: Sandbox): Promise<TracerAnswer>;
  onResponse?(response: ModelResponse): void;
}

/** Most numbered code lines the critique is shown (the whole file when it is short). */
const MAX_CODE_LINES = 1500;
const WHOLE_FILE_LINES = 400;
const WINDOW = 12;
/** Most characters of cited code the critique is shown (each line is cut at MAX_LINE_CHARS too). */
const MAX_CODE_CHARS = 300_000;

/**
 * The characters of cited code a model's budget allows: CODE_SHARE of it at about two characters a
 * token (numbered lines, fences and escapes cost more than prose), at most MAX_CODE_CHARS.
 */
function codeChars(budget: number | undefined): number {
  return budget === undefined
    ? MAX_CODE_CHARS
    : Math.min(MAX_CODE_CHARS, Math.floor(2 * CODE_SHARE * budget));
}

export async function critiqueNode(options: CritiqueOptions): Promise<CritiqueRecord> {
  const { node } = options;
  const items = specItems(node);
  const base = {
    version: 1 as const,
    iteration: options.iteration,
    node: node.id,
    mode: options.mode,
    packs: options.packs.map((p) => p.name),
  };
  let trace: Trace;
  try {
    trace = await runTracer({
      node,
      items,
      openSandbox: options.openSandbox,
      converse: options.converse,
    });
  } catch (error) {
    if (!isCritiqueFailed(error)) throw error;
    return {
      ...base,
      trace: { items: [], quantities: [] },
      traceChecks: {},
      findings: [],
      effect: "none",
      failed: error.message,
    };
  }
  const reader = new TaskFileReader(options.taskDir);
  const traceChecks = checkTrace(reader, trace);
  try {
    const reply = await runCritique(
      options.model,
      {
        node,
        items,
        trace,
        code: citedCode(reader, trace, codeChars(options.model.contextBudget?.("control", options.rank))),
        context: options.packs.map((p) => `## Domain pack: ${p.name}\n\n${p.text}`).join("\n\n"),
        injected: options.packs.map((p) => ({
          kind: "skill" as const,
          ref: `critique:${p.name}`,
          sha256: p.sha256,
        })),
        rank: options.rank,
        meta: options.meta,
      },
      options.onResponse,
    );
    const findings = reply.findings.map((f) => checkFinding(reader, f, traceChecks));
    return { ...base, trace, traceChecks, findings, effect: "none" };
  } catch (error) {
    if (!isCritiqueFailed(error)) throw error;
    return { ...base, trace, traceChecks, findings: [], effect: "none", failed: error.message };
  }
}

function isCritiqueFailed(error: unknown): error is CritiqueFailed {
  return error instanceof Error && error.name === "CritiqueFailed";
}

/** The files the trace cites, numbered, as the runner reads them: whole when short, else around the citations. */
export function citedCode(reader: TaskFileReader, trace: Trace, maxChars = MAX_CODE_CHARS): string {
  const cited = new Map<string, number[]>();
  for (const ref of [...trace.items, ...trace.quantities].flatMap((e) => e.refs)) {
    const lines = cited.get(ref.file) ?? [];
    lines.push(ref.line, ref.end_line ?? ref.line);
    cited.set(ref.file, lines);
  }
  const parts: string[] = [];
  let budget = MAX_CODE_LINES;
  let chars = maxChars;
  for (const [file, at] of cited) {
    const read = reader.lines(file);
    if ("problem" in read) {
      parts.push(`### ${inlineText(file)}\n\n(not read: ${inlineText(read.problem)})`);
      continue;
    }
    const all = !read.window && read.lines.at(-1) === "" ? read.lines.slice(0, -1) : read.lines;
    const keep = new Set<number>();
    if (all.length <= WHOLE_FILE_LINES) for (let n = 1; n <= all.length; n++) keep.add(n);
    else
      for (const n of at)
        for (let k = Math.max(1, n - WINDOW); k <= Math.min(all.length, n + WINDOW); k++) keep.add(k);
    const numbered: string[] = [];
    let previous = 0;
    for (const n of [...keep].sort((a, b) => a - b)) {
      if (budget <= 0 || chars <= 0) break;
      if (previous && n > previous + 1) numbered.push("   ...");
      const line = `${String(n).padStart(4)}| ${cutLine(all[n - 1] ?? "")}`;
      numbered.push(line);
      previous = n;
      budget--;
      chars -= line.length + 1;
    }
    if (read.window) numbered.push(`(the file is larger; only its first lines were read)`);
    if (budget <= 0) numbered.push(`(cut: more than ${MAX_CODE_LINES} lines of cited code)`);
    else if (chars <= 0)
      numbered.push(
        `(cut: more than ${maxChars} characters of cited code${maxChars < MAX_CODE_CHARS ? ", to keep the request inside the model's context window; the whole file is in the delivered task folder" : ""})`,
      );
    // The agent's file names and lines: one heading line, and a fence no line of theirs can close
    // (a CR in a line would end it for a Markdown parser: shown as `\r`, as every control character).
    // A link's target (a name the agent chose) goes on the file's one heading line, escaped too.
    const link = read.link ? ` (a link to ${inlineText(read.link)})` : "";
    parts.push(`### ${inlineText(file)}${link}\n\n${fenceBlock(numbered.join("\n"), "")}`);
  }
  return parts.join("\n\n");
}
