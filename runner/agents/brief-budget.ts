// Single calls (the pre-scan, the final review, a review's brief, the critique and tracer briefs,
// the helpers) under the model's context budget, as a pass's history is (docs/models.md "Context
// windows"). The budget is the gateway's (Model.contextBudget: the window less the reply's
// reservation) and the estimate the pass's (three bytes a token). Past it: task memory keeps its
// newest entries whole and the older ones as their titles (the whole entries stay in the run's
// memory file); agent text (a claim, a summary, findings) is quoted within a share of the budget,
// cut with a note saying where the whole text is; a request that still cannot fit is not sent, and
// the error names what is too long. Everything is a function of the texts and the budget, so a
// replay (given the recorded budget) sends the same requests.
import { estimateRequest, estimateTokens } from "../llm/context-window.ts";
import type { Model, ModelKind, ModelRequest } from "../llm/types.ts";
import { memoryChunks } from "../memory/entries.ts";
import { RunEnding } from "../run-ending.ts";

/** A brief is filled to this share of the budget: the rest is room for a structured retry's turn. */
export const FILL_SHARE = 0.8;
/** One quoted agent text (a claim, a summary, a list of findings) may hold this share of the budget. */
export const QUOTE_SHARE = 0.1;

/** Where the runner says the whole task memory is (a name, never a host path: replays compare prompts). */
export const TASK_MEMORY_FILE = "the run's task memory file (memory.md in the run folder)";

/** A request that does not fit the model's budget even shortened: it ends the run before it is sent. */
export class RequestTooLong extends RunEnding {
  override name = "RequestTooLong";
  constructor(
    role: string,
    estimate: number,
    budget: number,
    parts: readonly BriefPart[],
    /** What the budget is, in words (a lowered one says the refusal it came from). */
    budgetIs = "its context window less the reply's reservation",
  ) {
    const largest = [...parts]
      .sort((a, b) => b.tokens - a.tokens)
      .slice(0, 3)
      .map((p) => `${p.name} (about ${p.tokens} tokens)`)
      .join(", ");
    super(
      `the ${role} request holds about ${estimate} tokens, past the model's prompt budget of ${budget} (${budgetIs}), after shortening task memory and agent text; it was not sent. Largest parts: ${largest || "(none named)"}. Give the model a larger window (contextWindow in models.yaml) or a smaller reply reservation (maxTokens), or shorten what is named.`,
      { status: "failed", limit: "context", prefix: "request too long" },
    );
  }
}

/** A named part of a request, for the error that says what is too long. */
export interface BriefPart {
  name: string;
  tokens: number;
}

/** The prompt tokens a single call of this kind and rank may hold (undefined: no known window). */
export function budgetFor(model: Model, kind: ModelKind, rank: number): number | undefined {
  return model.contextBudget?.(kind, rank);
}

/**
 * Throws RequestTooLong when the request's estimate passes the budget; `parts` name its pieces
 * (the system prompt and the tools are added here).
 */
export function assertFits(
  request: Pick<ModelRequest, "role" | "system" | "messages" | "tools" | "jsonSchema" | "workspaceContext">,
  budget: number | undefined,
  parts: readonly BriefPart[] = [],
  budgetIs?: string,
): void {
  if (budget === undefined) return;
  const estimate = estimateRequest(request);
  if (estimate <= budget) return;
  throw new RequestTooLong(
    request.role,
    estimate,
    budget,
    [
      { name: "the system prompt", tokens: estimateTokens(request.system) },
      ...(request.tools?.length
        ? [{ name: "the tool definitions", tokens: estimateTokens(JSON.stringify(request.tools)) }]
        : []),
      ...parts,
    ],
    budgetIs,
  );
}

/** A quoted text within `tokens`: whole, or cut, with the runner's note to put outside the quote. */
export interface Quote {
  text: string;
  /** The runner's note on the cut (undefined when the text is whole). */
  note?: string;
}

/**
 * `text` within `tokens` (estimateTokens). A cut keeps the start (or, with `keep: "end"`, the end:
 * where a log reports its failure) and says how much was left out and where the whole text is; the
 * note is the runner's, so the caller puts it outside the quote.
 */
export function quoteWithin(
  text: string,
  tokens: number,
  where: string,
  keep: "start" | "end" = "start",
): Quote {
  const total = estimateTokens(text);
  if (total <= tokens) return { text };
  const take = (n: number) => (keep === "start" ? startOf(text, n) : endOf(text, n));
  let chars = Math.floor((text.length * tokens) / total);
  let cut = take(chars);
  while (chars > 0 && estimateTokens(cut) > tokens) {
    chars = Math.floor(chars * 0.9);
    cut = take(chars);
  }
  const which = keep === "start" ? "its first" : "its last";
  return {
    text: cut,
    note: `[scifi cut the text above from ${text.length} characters to ${which} ${cut.length} to keep the request inside the model's context window; the whole text is in ${where}.]`,
  };
}

/** The first `n` characters, never ending inside a surrogate pair. */
function startOf(text: string, n: number): string {
  const cut = text.slice(0, n);
  const last = cut.charCodeAt(cut.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut;
}

/** The last `n` characters, never starting inside a surrogate pair. */
function endOf(text: string, n: number): string {
  if (n <= 0) return "";
  const cut = text.slice(-n);
  const first = cut.charCodeAt(0);
  return first >= 0xdc00 && first <= 0xdfff ? cut.slice(1) : cut;
}

/** The history tail in a brief may hold this share of the budget. */
export const HISTORY_SHARE = 0.25;

/** Where the runner says the whole history is. */
export const HISTORY_FILE = "the run's history (history.jsonl in the run folder)";

/**
 * The newest whole lines of `text` within `tokens` (a history tail: one event a line, so no line is
 * cut), with the runner's note on how many of the oldest were left out.
 */
export function newestLines(text: string, tokens: number | undefined, where = HISTORY_FILE): Quote {
  if (tokens === undefined || estimateTokens(text) <= tokens) return { text };
  const lines = text.split("\n");
  let start = 0;
  while (start < lines.length && estimateTokens(lines.slice(start).join("\n")) > tokens) start++;
  return {
    text: lines.slice(start).join("\n"),
    note: `[scifi left out the ${start} oldest of these ${lines.length} lines to keep the request inside the model's context window; every line is in ${where}.]`,
  };
}

/** A quote within its share of the budget (all of it when the model has no known budget). */
export function quoteShare(text: string, budget: number | undefined, where: string): Quote {
  return budget === undefined ? { text } : quoteWithin(text, Math.floor(QUOTE_SHARE * budget), where);
}

/** Task memory as the prompt shows it, within `tokens`. */
export interface FittedMemory {
  text: string;
  /** Entries shown by their titles only. */
  titled: number;
  /** The oldest entries left out altogether (not even their titles fit). */
  omitted: number;
}

/**
 * A memory file's text (with its entry marks) as the prompt shows it (readMemory's form), within
 * `tokens`: whole when it fits, else the newest entries whole while they fit and the older ones by
 * their titles (the oldest titles left out too when even they do not fit), with the runner's note
 * first. Text without entry marks (a hand-edited memory.md) is one chunk: whole while it fits, else
 * shown by the title `(notes outside the runner's entries)` like any older entry (it is never split).
 */
export function fitMemory(text: string, tokens: number | undefined, where = TASK_MEMORY_FILE): FittedMemory {
  const chunks = memoryChunks(text);
  const whole = chunks.map((c) => c.text).join("");
  if (tokens === undefined || estimateTokens(whole) <= tokens) return { text: whole, titled: 0, omitted: 0 };
  // The note's words are counted with room for its numbers.
  const noteTokens = estimateTokens(memoryNote(chunks.length, chunks.length, where)) + 8;
  let used = noteTokens;
  const kept: string[] = [];
  let newest = true;
  let titled = 0;
  let omitted = 0;
  for (let i = chunks.length - 1; i >= 0; i--) {
    const chunk = chunks[i] as { title?: string; text: string };
    const full = estimateTokens(chunk.text);
    if (newest && used + full <= tokens) {
      kept.unshift(chunk.text);
      used += full;
      continue;
    }
    newest = false;
    const line = `### ${chunk.title ?? "(notes outside the runner's entries)"} (title only)\n\n`;
    const cost = estimateTokens(line);
    if (omitted === 0 && used + cost <= tokens) {
      kept.unshift(line);
      used += cost;
      titled++;
    } else omitted++;
  }
  return { text: `${memoryNote(titled, omitted, where)}\n\n${kept.join("")}`, titled, omitted };
}

function memoryNote(titled: number, omitted: number, where: string): string {
  const left = omitted > 0 ? `, and left out the ${omitted} oldest altogether` : "";
  return `[scifi shortened this task memory to keep the request inside the model's context window: the ${titled} older entries below show only their titles${left}; the newest entries are whole. Every entry is whole in ${where}.]`;
}

/**
 * The tokens left for one part of a brief: the budget's fill share less the request built with that
 * part empty (`without`). Undefined when the model has no known budget.
 */
export function roomFor(
  budget: number | undefined,
  without: Pick<ModelRequest, "system" | "messages" | "tools" | "jsonSchema" | "workspaceContext">,
): number | undefined {
  if (budget === undefined) return undefined;
  return Math.max(0, Math.floor(FILL_SHARE * budget) - estimateRequest(without));
}
