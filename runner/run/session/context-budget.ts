// Keeping a pass's requests inside the model's context window. Before each call the request's size
// is estimated (conservatively: three bytes a token, fewer than any tokenizer packs into English,
// code or JSON); past HIGH_WATER of the budget the oldest tool outputs are elided, oldest first,
// until it is under LOW_WATER. The history is changed only at these compaction points, so between
// them every request extends the one before and the prompt cache's prefix stays valid. An elided
// output becomes a placeholder saying where the tape holds its full text (by its call id, which a
// replay reproduces, unlike record numbers) and the `recall` call that returns it; when placeholders alone no longer fit (a long night), the oldest steps are
// removed whole and a note in the brief says so. Everything here is a function of the messages and the budget, so a replay
// (which gets the recorded budget) compacts at the same points and sends the same requests.
import type { ContentBlock, Message, ToolSpec } from "../../llm/types.ts";
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

/**
 * Tokens of a text, estimated from above: three bytes a token of the text as JSON carries it (so
 * control characters and binary output, escaped six bytes each, count as what they cost).
 */
export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify(text), "utf8") / 3);
}

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

  constructor(budget: number, record?: (id: string, text: string) => boolean) {
    this.budget = budget;
    this.#record = record;
  }

  /** The request's estimated prompt tokens. */
  estimate(fixed: FixedPart, messages: readonly Message[]): number {
    return (
      estimateTokens(fixed.system) +
      estimateTokens(JSON.stringify(fixed.tools)) +
      estimateTokens(fixed.workspaceContext) +
      messages.reduce((n, m) => n + messageTokens(m), 0)
    );
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
        const smaller = now > target ? this.#elide(block) : undefined;
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
      now -= messageTokens(call) + messageTokens(results);
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
      const before0 = messageTokens(brief);
      out[0] = { role: brief.role, content: [...kept, note] };
      now += messageTokens(out[0] as Message) - before0;
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

  #elide(block: ContentBlock): ContentBlock | undefined {
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
      // A long input of the agent's own (a file it wrote): its strings shortened; the tape keeps them.
      let shortened = false;
      const input: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(block.input)) {
        if (typeof value === "string" && value.length > KEEP_CHARS) {
          input[key] = `[scifi elided ${value.length} characters of this input; the audit tape keeps them]`;
          shortened = true;
        } else input[key] = value;
      }
      return shortened ? { ...block, input } : undefined;
    }
    return undefined;
  }
}

function messageTokens(message: Message): number {
  return message.content.reduce((n, b) => n + blockTokens(b), 4);
}

/** Sent blocks are frozen and never change: each is measured once (elision adds no O(history) work). */
const measured = new WeakMap<ContentBlock, number>();

function blockTokens(block: ContentBlock): number {
  const known = measured.get(block);
  if (known !== undefined) return known;
  const tokens = countBlock(block);
  measured.set(block, tokens);
  return tokens;
}

function countBlock(block: ContentBlock): number {
  switch (block.type) {
    case "text":
      return estimateTokens(block.text) + 4;
    case "thinking":
      return estimateTokens(block.thinking) + estimateTokens(block.signature ?? "") + 4;
    case "tool_use":
      return estimateTokens(block.name) + estimateTokens(JSON.stringify(block.input)) + 12;
    case "tool_result":
      return estimateTokens(block.content) + 12;
  }
}
