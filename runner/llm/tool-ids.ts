// Tool call ids unique in the run. Some OpenAI-compatible servers number their calls per response
// (Kimi's `emit:0` at every step, `call_0`): within a pass the wire would carry one id twice, and
// across passes a placeholder's `audit show --call` would find another pass's output (a41c, a41e).
// An id the run has already used gets its pass and step appended; every other id is kept as the
// server gave it. The gateway does it before it records the reply, so the tape holds the ids the
// history uses (a call pairs with its result there) and a replay, reading them back, keeps them.
import type { AgentRole, ContentBlock } from "./types.ts";

/** Short role tags keep ids under the 40 characters OpenAI accepts (`call_` + 24 + `-fr12-30`). */
const TAGS: Partial<Record<AgentRole, string>> = {
  work: "w",
  review: "r",
  final_review: "fr",
  tracer: "t",
  critique: "c",
};

/** The scope of one step of one pass: `w2-3` is the work pass of iteration 2, step 3. */
export function idScope(role: AgentRole, iteration: number | undefined, step: number): string {
  return `${TAGS[role] ?? role}${iteration ?? 0}-${step}`;
}

/**
 * The reply's tool calls with ids not in `seen` (the ids used so far; the reply's are added): a
 * used `call_0` becomes `call_0-w2-3` (scope from idScope), then `call_0-w2-3-2`; a missing id is
 * `call-<position>-w2-3`. A function of the replies in order alone, so a replay makes the same ids.
 */
export function scopeIds(content: ContentBlock[], scope: string, seen: Set<string>): ContentBlock[] {
  let changed = false;
  const out = content.map((block, position) => {
    if (block.type !== "tool_use") return block;
    let id = block.id;
    if (!id || seen.has(id)) {
      const base = `${block.id || `call-${position}`}-${scope}`;
      id = base;
      for (let k = 2; seen.has(id); k++) id = `${base}-${k}`;
    }
    seen.add(id);
    if (id === block.id) return block;
    changed = true;
    return { ...block, id };
  });
  return changed ? out : content;
}

/** The tool call ids of the replies recorded so far (a resumed run's earlier processes included). */
export function usedToolIds(responses: Iterable<{ content: ContentBlock[] } | undefined>): Set<string> {
  const seen = new Set<string>();
  for (const response of responses)
    for (const block of response?.content ?? [])
      if (block.type === "tool_use" && block.id) seen.add(block.id);
  return seen;
}
