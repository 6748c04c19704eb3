// Keeping a pass's requests inside the model's context window. Before each call the request's size
// is estimated (conservatively: three bytes a token of each block as the wire's JSON carries it,
// fewer than any tokenizer packs into English, code or JSON; ids at a character a token); past
// HIGH_WATER of the budget the oldest tool outputs are elided, oldest first, until it is under
// LOW_WATER. The history is changed only at these compaction points, so between them every request
// extends the one before and the prompt cache's prefix stays valid. An elided output becomes a
// placeholder saying where the tape holds its full text (by its call id, which a replay reproduces,
// unlike record numbers) and the `recall` call that returns it; when placeholders alone no longer
// fit (a long night), the oldest steps are removed whole and a note in the brief says so; a request
// that still cannot fit is never sent. Everything here is a function of the messages, the budget
// and whether the wire sends thinking, all recorded, so a replay compacts at the same points and
// sends the same requests.

import { estimateTokens } from "../../llm/context-window.ts";
import { type ContentBlock, ContextTooLong, type Message, type ToolSpec } from "../../llm/types.ts";
import { ENDING, type Ending } from "../../run-ending.ts";
import { capText } from "../../tools/truncate.ts";

/** Compaction starts when the estimate passes this share of the budget... */
export const HIGH_WATER = 0.85;
/** ...and elides until the estimate is under this share, so compactions are rare. */
export const LOW_WATER = 0.5;
/** Texts up to this many characters stay: the placeholder would not be much shorter. */
export const KEEP_CHARS = 400;

/** How the runner's note on removed steps starts (it replaces its earlier note). */
const NOTE_START = "[scifi removed the ";

/** A tool output may hold at most this share of the budget, measured as the budget is (estimateTokens). */
export const OUTPUT_SHARE = 0.25;

// One measure for passes and single calls: the llm layer's (agents and helpers cannot import this layer).
export { estimateTokens };

/** The cap on one tool output's characters under a budget (an upper bound: see capToBudget). */
export function outputCap(budget: number): number {
  return Math.max(1000, Math.floor(OUTPUT_SHARE * 3 * budget));
}

/**
 * A tool output cut to its share of the budget by the measure the budget is kept with (JSON bytes),
 * not by characters: control bytes (six JSON bytes each) or CJK text capped by characters alone
 * would pass the whole budget, be elided at once, and their recall too (a41).
 */
export function capToBudget(text: string, budget: number): string {
  const limit = Math.max(334, Math.floor(OUTPUT_SHARE * budget));
  let chars = outputCap(budget);
  let out = capText(text, chars);
  // Each round shrinks the cut by the overshoot's ratio; escaped bytes cost at most 6 a character.
  while (estimateTokens(out) > limit && chars > 100) {
    chars = Math.floor(chars * Math.min(0.95, limit / estimateTokens(out)));
    out = capText(text, chars);
  }
  return out;
}

/** What every request of the pass sends besides its history. */
export interface FixedPart {
  system: string;
  tools: readonly ToolSpec[];
  workspaceContext: string;
}

export interface KeeperOptions {
  /**
   * Whether the wire sends the model's reasoning (thinking blocks) back: Anthropic's does, Chat
   * Completions has no field for it (Model.sendsThinking). Default true: counted when unsure.
   */
  sendsThinking?: boolean;
  /**
   * Puts an output elided before any request carried it on the tape (a `tool_output` event), so its
   * placeholder can say where it is; false or absent: no tape keeps it, and the placeholder says so.
   */
  record?: (id: string, text: string) => boolean;
}

/**
 * A request still past the budget after compaction (a brief that alone passes it): never sent, as
 * the provider would refuse it; the message names the parts and what to shorten.
 */
export class RequestPastBudget extends ContextTooLong {
  override readonly [ENDING]: Ending = {
    status: "failed",
    limit: "model",
    prefix: "request past the model's context window",
  };
}

export interface Compaction {
  messages: Message[];
  /** Tool outputs and inputs elided, and whole steps removed, at this point. */
  elided: number;
  /** Estimated prompt tokens before and after. */
  before: number;
  after: number;
}

export class ContextKeeper {
  /** Prompt tokens a request may hold (Model.contextBudget; lowered when a provider refuses one). */
  budget: number;
  readonly #full = new Map<string, string>();
  /** Ids of the tool outputs a recorded request has carried (their full text is on the tape). */
  readonly #sent = new Set<string>();
  /** Puts an output no request carried on the tape before it is elided; false: no tape. */
  readonly #record: ((id: string, text: string) => boolean) | undefined;
  #droppedSteps = 0;
  /** See KeeperOptions.sendsThinking. */
  readonly sendsThinking: boolean;

  constructor(budget: number, options: KeeperOptions = {}) {
    this.budget = budget;
    this.sendsThinking = options.sendsThinking ?? true;
    this.#record = options.record;
  }

  /** The request's estimated prompt tokens. */
  estimate(fixed: FixedPart, messages: readonly Message[]): number {
    return this.#fixedTokens(fixed) + messages.reduce((n, m) => n + this.#messageTokens(m), 0);
  }

  /**
   * Throws RequestPastBudget when the request, compacted as far as it goes, is still past the
   * budget: sending it would only be refused, in the provider's words that name no part of the task.
   */
  check(fixed: FixedPart, messages: readonly Message[]): void {
    const total = this.estimate(fixed, messages);
    if (total <= this.budget) return;
    const brief = messages[0] ? this.#messageTokens(messages[0]) : 0;
    const parts = [
      `the task brief ${brief}`,
      `the system prompt ${estimateTokens(fixed.system)}`,
      `the tool descriptions ${estimateTokens(JSON.stringify(fixed.tools))}`,
      `the workspace context ${estimateTokens(fixed.workspaceContext)}`,
      `the rest of the conversation ${total - brief - this.#fixedTokens(fixed)}`,
    ];
    const what =
      brief > this.budget / 2
        ? "Shorten the task brief (the SAM's Context, the skills and memory notes it brings)"
        : "Shorten the largest part";
    throw new RequestPastBudget(
      `The request to the model is about ${total} tokens (estimated from above, after eliding what can be elided), past its prompt budget of ${this.budget} tokens (the model's context window less the reply's reservation), so it was not sent. Its parts in tokens: ${parts.join(", ")}. ${what}, or give the model a larger window: \`contextWindow\` on its entry in models.yaml (or the script's \`context_window\`), or a smaller \`maxTokens\`.`,
    );
  }

  #fixedTokens(fixed: FixedPart): number {
    return (
      estimateTokens(fixed.system) +
      estimateTokens(JSON.stringify(fixed.tools)) +
      estimateTokens(fixed.workspaceContext)
    );
  }

  /** A message's tokens as its wire carries it: thinking only where the wire sends it back. */
  #messageTokens(message: Message): number {
    let n = MESSAGE_TOKENS;
    for (const block of message.content)
      if (block.type !== "thinking" || this.sendsThinking) n += blockTokens(block);
    return n;
  }

  /**
   * Remembers that the newest tool outputs went out in a request the tape recorded (`seq`: the
   * call's record; undefined: the model keeps no tape), so eliding them later needs no record of its own.
   */
  sent(messages: readonly Message[], seq: number | undefined): void {
    if (seq === undefined) return;
    for (const block of messages.at(-1)?.content ?? [])
      if (block.type === "tool_result") this.#sent.add(block.toolUseId);
  }

  /**
   * The history compacted when the request would pass HIGH_WATER of the budget (or always, with
   * `force`: the provider refused it as too long), else undefined. The first message (the brief)
   * and, unless forced, the newest one are never elided.
   */
  fit(fixed: FixedPart, messages: readonly Message[], force = false): Compaction | undefined {
    const before = this.estimate(fixed, messages);
    if (!force && before <= HIGH_WATER * this.budget) return undefined;
    const target = LOW_WATER * this.budget;
    const out = [...messages];
    let now = before;
    let elided = 0;
    // Elides the blocks of out[i] while the estimate is above the target.
    const shrink = (i: number) => {
      const message = out[i] as Message;
      let changed = false;
      const content = message.content.map((block) => {
        const smaller = now > target ? this.#elide(block, message.role) : undefined;
        if (!smaller) return block;
        now += blockTokens(smaller) - blockTokens(block);
        elided++;
        changed = true;
        return smaller;
      });
      if (changed) out[i] = { role: message.role, content };
    };
    const last = force ? out.length : out.length - 1;
    for (let i = 1; i < last && now > target; i++) shrink(i);
    // Placeholders and short steps add up over a long night: past that, the oldest steps go whole
    // (a call with its results, so every result still answers its call), the newest always stays.
    let dropped = 0;
    const dropFrom = 1;
    while (now > target && dropFrom + 2 <= out.length - 2) {
      const [call, results] = out.splice(dropFrom, 2) as [Message, Message];
      for (const block of results.content)
        if (block.type === "tool_result" && !this.#full.has(block.toolUseId))
          this.#full.set(block.toolUseId, block.content);
      now -= this.#messageTokens(call) + this.#messageTokens(results);
      dropped += 2;
    }
    if (dropped > 0) {
      this.#droppedSteps += dropped / 2;
      const brief = out[0] as Message;
      const note: ContentBlock = {
        type: "text",
        text: `[scifi removed the ${this.#droppedSteps} oldest steps of this pass from the conversation to keep the request inside the model's context window; their calls and outputs are on the audit tape, and recall returns any tool output by its call's id.]`,
      };
      const kept = brief.content.filter((b) => !(b.type === "text" && b.text.startsWith(NOTE_START)));
      const before0 = this.#messageTokens(brief);
      out[0] = { role: brief.role, content: [...kept, note] };
      now += this.#messageTokens(out[0] as Message) - before0;
    }
    // A newest output that alone passes the budget (a binary dump) is elided too: a refusal is certain.
    if (!force && now > this.budget) shrink(out.length - 1);
    if (elided === 0 && dropped === 0) return undefined;
    return { messages: out, elided: elided + dropped / 2, before, after: now };
  }

  /**
   * The provider refused a request as too long: its window is smaller than the budget said. From
   * here on the budget is 80 % of that request's estimate (derived from the request alone, so a
   * replay that meets the same recorded refusal lowers it the same way).
   */
  refused(fixed: FixedPart, messages: readonly Message[]): void {
    this.budget = Math.min(this.budget, Math.floor(0.8 * this.estimate(fixed, messages)));
  }

  /** The full text of an elided tool output, by its tool call id. */
  recall(id: string): string | undefined {
    return this.#full.get(id);
  }

  #elide(block: ContentBlock, role: Message["role"]): ContentBlock | undefined {
    if (block.type === "tool_result") {
      if (block.content.length <= KEEP_CHARS || this.#full.has(block.toolUseId)) return undefined;
      this.#full.set(block.toolUseId, block.content);
      const id = JSON.stringify(block.toolUseId);
      // Named by the call id, never a record number: a replay's tape numbers its records otherwise
      // (no context_window events, resumes) and must send the same placeholder (a41c).
      let where = `in the request that first sent it (scifi audit show RUN --call ${id})`;
      if (!this.#sent.has(block.toolUseId)) {
        // No request carried it (elided as it arrived): recorded now, or the placeholder says so.
        where = this.#record?.(block.toolUseId, block.content)
          ? `in a tool_output record (scifi audit show RUN --call ${id})`
          : "";
      }
      return {
        ...block,
        content: `[scifi elided this tool output (${block.content.length} characters) to keep the request inside the model's context window. ${where ? `The full text is on the audit tape ${where}` : "No request sent it and no audit tape keeps it"}; call recall with {"id": ${id}} to read it again.]`,
      };
    }
    if (block.type === "tool_use") {
      // A long input of the agent's own (a file it wrote): its strings shortened at any depth; the
      // tape keeps them. An input still long (many short strings) is replaced whole.
      let shortened = false;
      const shorten = (value: unknown): unknown => {
        if (typeof value === "string" && value.length > KEEP_CHARS) {
          shortened = true;
          return `[scifi elided ${value.length} characters of this input; the audit tape keeps them]`;
        }
        if (Array.isArray(value)) return value.map(shorten);
        if (value !== null && typeof value === "object")
          return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shorten(v)]));
        return value;
      };
      let input = shorten(block.input) as Record<string, unknown>;
      const length = JSON.stringify(input).length;
      if (length > 4 * KEEP_CHARS) {
        input = {
          elided: `[scifi elided this call's input (${length} characters) to keep the request inside the model's context window; the audit tape keeps it]`,
        };
        shortened = true;
      }
      return shortened ? { ...block, input } : undefined;
    }
    if (block.type === "text" && role === "assistant" && block.text.length > KEEP_CHARS) {
      // The model's own long text (a log pasted into a reply) would stay in every later request.
      return {
        type: "text",
        text: `[scifi elided ${block.text.length} characters of this reply to keep the request inside the model's context window; the audit tape keeps them]`,
      };
    }
    return undefined;
  }
}

/** What a message costs besides its blocks: `{"role":"assistant","content":[...]}`. */
const MESSAGE_TOKENS = 12;

/** Sent blocks are frozen and never change: each is measured once (elision adds no O(history) work). */
const measured = new WeakMap<ContentBlock, number>();

function blockTokens(block: ContentBlock): number {
  const known = measured.get(block);
  if (known !== undefined) return known;
  const tokens = countBlock(block);
  measured.set(block, tokens);
  return tokens;
}

/**
 * A block as its wire carries it, in the larger of the two formats (keys, quotes and escapes
 * included: they are most of a short step), at three bytes a token. A tool call's id goes over the
 * wire twice (with the call and with its result) and is counted with each at a character a token:
 * random ids tokenize about that densely.
 */
function countBlock(block: ContentBlock): number {
  switch (block.type) {
    case "text":
      return jsonTokens({ type: "text", text: block.text });
    case "thinking":
      return jsonTokens({ type: "thinking", thinking: block.thinking, signature: block.signature ?? "" });
    case "tool_use":
      return (
        jsonTokens({
          id: "",
          type: "function",
          function: { name: block.name, arguments: JSON.stringify(block.input) },
        }) + block.id.length
      );
    case "tool_result":
      return (
        jsonTokens(
          block.isError
            ? { type: "tool_result", tool_use_id: "", content: `ERROR: ${block.content}`, is_error: true }
            : { type: "tool_result", tool_use_id: "", content: block.content },
        ) + block.toolUseId.length
      );
  }
}

function jsonTokens(value: unknown): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(value), "utf8") / 3);
}
