// The tracer and the critique (003, sections 2 and 4.5). The tracer (control model, read-only tools in
// a fresh read-only sandbox on the final task folder) writes the as-implemented specification; the
// critique (control model, no tools) compares it with the SAM, with the cited code as evidence, and
// writes typed findings. Both replies are zod-validated with one retry, like the review's verdict.
// What the runner does with them (citations checked, the verdict made stricter) is runner/critique/critique-pass.ts.
import type { z } from "zod";
import { budgetFor, quoteWithin } from "../agents/brief-budget.ts";
import { fillTemplate, promptFile } from "../agents/prompt.ts";
import { parseJsonText, structuredCall } from "../agents/structured.ts";
import type { Model, ModelRequest, ModelResponse } from "../llm/types.ts";
import { fenceBlock } from "../markdown-quote.ts";
import { RunEnding } from "../run-ending.ts";
import type { SamNode } from "../sam/types.ts";
import type { Sandbox } from "../sandbox/types.ts";
import type { SpecItem } from "./items.ts";
import { CritiqueReply, Trace } from "./schema.ts";

/** No valid trace or findings after one retry: the critique is missing (recorded), never "clean". */
export class CritiqueFailed extends RunEnding {
  override name = "CritiqueFailed";
  constructor(message: string) {
    super(message, { status: "failed", limit: "agent_reply" });
  }
}

export function tracerSystem(): string {
  return promptFile("tracer.md");
}

export function critiqueSystem(): string {
  return promptFile("critique.md");
}

function itemList(items: readonly SpecItem[]): string {
  return items.map((item) => `- **${item.id}** (${item.section}): ${item.text}`).join("\n") || "(no items)";
}

export function tracerInput(node: SamNode, items: readonly SpecItem[]): string {
  return fillTemplate("tracer.input.md", { node: node.id, title: node.title, items: itemList(items) });
}

/**
 * The critique's brief. With a model `budget` the tracer's trace is kept within a share of it, cut
 * with the runner's note saying where the whole text is (the cited code is cut where it is read:
 * critique-pass.ts, within CODE_SHARE).
 */
export function critiqueInput(
  node: SamNode,
  items: readonly SpecItem[],
  trace: Trace,
  code: string,
  context: string,
  budget?: number,
): string {
  const traceJson = JSON.stringify(trace, null, 2);
  const shownTrace =
    budget === undefined
      ? { text: traceJson }
      : quoteWithin(traceJson, Math.floor(TRACE_SHARE * budget), TRACE_AT);
  return fillTemplate("critique.input.md", {
    node: node.id,
    title: node.title,
    items: itemList(items),
    context: context || "(no domain pack selected: the generic rules above apply)",
    trace: `${fenceBlock(shownTrace.text, "json")}${shownTrace.note ? `\n\n${shownTrace.note}` : ""}`,
    // Quoted file by file, already within its share (critique-pass.ts: citedCode's maxChars).
    code: code || "(the trace cites no file the runner could read)",
  });
}

/** The trace and the cited code may hold these shares of the budget (the rest is the SAM's and the reply's). */
const TRACE_SHARE = 0.2;
export const CODE_SHARE = 0.4;
const TRACE_AT = "the audit tape (the tracer's last reply)";

/** How one tracer conversation ended: with an answer (JSON or text), or without one and why. */
export type TracerAnswer = { json?: unknown; text: string } | { noAnswer: string };

export interface TracerOptions {
  node: SamNode;
  items: readonly SpecItem[];
  /** Starts the tracer's own sandbox: fresh, read-only, on the final task folder. */
  openSandbox(): Promise<Sandbox>;
  converse(brief: string, sandbox: Sandbox): Promise<TracerAnswer>;
}

/** The tracer's trace; throws CritiqueFailed when no valid one came after one retry. */
export async function runTracer(options: TracerOptions): Promise<Trace> {
  const sandbox = await options.openSandbox();
  try {
    const brief = tracerInput(options.node, options.items);
    let answer = await options.converse(brief, sandbox);
    for (let attempt = 0; ; attempt++) {
      const got = parsed(Trace, answer);
      if (typeof got !== "string") return got;
      if (attempt >= 1) throw new CritiqueFailed(`the tracer gave no valid trace twice: ${got}`);
      const retry = `Your trace was rejected: ${got}\nAnswer with one JSON object only: { "items": [...], "quantities": [...] }.`;
      answer = await options.converse(`${brief}\n\n${retry}`, sandbox);
    }
  } finally {
    await sandbox.stop().catch(() => undefined);
  }
}

function parsed<S extends z.ZodType>(schema: S, answer: TracerAnswer): z.infer<S> | string {
  if ("noAnswer" in answer) return `the tracer ended without a trace (${answer.noAnswer})`;
  const result = schema.safeParse(answer.json ?? parseJsonText(answer.text));
  if (result.success) return result.data;
  return result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
}

export interface CritiqueCall {
  node: SamNode;
  items: readonly SpecItem[];
  trace: Trace;
  code: string;
  /** The selected domain packs' critique contexts, joined; injected records say which. */
  context: string;
  injected: NonNullable<ModelRequest["injected"]>;
  rank: number;
  meta: ModelRequest["meta"];
}

/** The critique's findings (one structured call; CritiqueFailed after a second malformed reply). */
export async function runCritique(
  model: Model,
  call: CritiqueCall,
  onResponse?: (response: ModelResponse) => void,
): Promise<CritiqueReply> {
  try {
    const { value } = await structuredCall(
      model,
      {
        role: "critique",
        kind: "control",
        rank: call.rank,
        system: critiqueSystem(),
        messages: [
          {
            role: "user",
            content: [
              {
                type: "text",
                text: critiqueInput(
                  call.node,
                  call.items,
                  call.trace,
                  call.code,
                  call.context,
                  budgetFor(model, "control", call.rank),
                ),
              },
            ],
          },
        ],
        injected: call.injected,
        meta: call.meta,
      },
      CritiqueReply,
      "critique_findings",
      onResponse,
    );
    return value;
  } catch (error) {
    if (error instanceof Error && error.name === "MalformedReply") throw new CritiqueFailed(error.message);
    throw error;
  }
}
