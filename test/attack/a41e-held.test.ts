// Attacker a41e on issue 41's fixes (context budget, single calls): what held. Real ContextKeeper,
// scopeIds and brief-budget code, no model needed (the pass-level attacks that broke are in
// test/open/a41e-*.pending.ts).
import { describe, expect, it } from "vitest";
import { newestLines, quoteWithin } from "../../runner/agents/brief-budget.ts";
import { idScope, scopeIds } from "../../runner/llm/tool-ids.ts";
import type { ContentBlock, Message } from "../../runner/llm/types.ts";
import { ContextKeeper, type FixedPart, RequestPastBudget } from "../../runner/run/session/context-budget.ts";

const fixed: FixedPart = { system: "You are the work agent.", tools: [], workspaceContext: "limits" };

/** A pass's history: the brief, then `n` steps of one call and its output of `chars` characters. */
function history(n: number, chars: number, prefix = "t"): Message[] {
  const out: Message[] = [{ role: "user", content: [{ type: "text", text: "the brief" }] }];
  for (let i = 0; i < n; i++) {
    out.push({
      role: "assistant",
      content: [{ type: "tool_use", id: `${prefix}${i}`, name: "bash", input: { command: `c${i}` } }],
    });
    out.push({
      role: "user",
      content: [
        { type: "tool_result", toolUseId: `${prefix}${i}`, content: `out-${i} ${"z".repeat(chars)}` },
      ],
    });
  }
  return out;
}

describe("a41e held: recall, compaction and ids", () => {
  it("a pass's recall never returns another pass's output (one keeper a pass)", () => {
    const first = new ContextKeeper(4000);
    const fitted = first.fit(fixed, history(12, 2000));
    expect(fitted?.elided).toBeGreaterThan(0);
    expect(first.recall("t0")).toMatch(/^out-0 /);
    const second = new ContextKeeper(4000);
    expect(second.recall("t0")).toBeUndefined();
  });

  it("removed steps keep every result answering its call, and recall still returns their outputs", () => {
    const keeper = new ContextKeeper(3000);
    const fitted = keeper.fit(fixed, history(200, 500));
    const out = fitted?.messages ?? [];
    expect(out[0]?.content.some((b) => b.type === "text" && b.text.startsWith("[scifi removed the "))).toBe(
      true,
    );
    for (let i = 1; i < out.length; i++) {
      const results = (out[i]?.content ?? []).flatMap((b) => (b.type === "tool_result" ? [b.toolUseId] : []));
      if (results.length === 0) continue;
      const calls = (out[i - 1]?.content ?? []).flatMap((b) => (b.type === "tool_use" ? [b.id] : []));
      expect(calls).toEqual(results);
    }
    expect(keeper.recall("t0")).toMatch(/^out-0 /);
  });

  it("a refusal's forced compaction records the newest unsent output before eliding it", () => {
    const recorded: string[] = [];
    const keeper = new ContextKeeper(100_000, {
      record: (id) => {
        recorded.push(id);
        return true;
      },
    });
    const messages = history(1, 5000);
    keeper.refused(fixed, messages);
    const fitted = keeper.fit(fixed, messages, true);
    const newest = fitted?.messages.at(-1)?.content[0];
    expect(newest?.type === "tool_result" ? newest.content : "").toContain("in a tool_output record");
    expect(recorded).toEqual(["t0"]);
  });

  it("a brief that alone passes the budget is never sent (RequestPastBudget, naming the brief)", () => {
    const keeper = new ContextKeeper(1000);
    const messages: Message[] = [{ role: "user", content: [{ type: "text", text: "x".repeat(20_000) }] }];
    expect(keeper.fit(fixed, messages)).toBeUndefined();
    expect(() => keeper.check(fixed, messages)).toThrow(RequestPastBudget);
    expect(() => keeper.check(fixed, messages)).toThrow(/Shorten the task brief/);
  });

  it("ids stay unique when a model writes the id the runner would have made, in and across passes", () => {
    const seen = new Set<string>();
    const use = (id: string): ContentBlock => ({ type: "tool_use", id, name: "bash", input: {} });
    const ids = [
      ...scopeIds([use("emit:0-w1-2")], idScope("work", 1, 1), seen),
      ...scopeIds([use("emit:0")], idScope("work", 1, 1), seen),
      ...scopeIds([use("emit:0"), use("emit:0")], idScope("work", 1, 2), seen),
      ...scopeIds([use("emit:0")], idScope("work", 2, 2), seen),
      ...scopeIds([use("emit:0")], idScope("review", 1, 2), seen),
      ...scopeIds([use(""), use("")], idScope("work", 1, 3), seen),
    ].map((b) => (b.type === "tool_use" ? b.id : ""));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("OpenAI-format thinking is not counted, Anthropic's is", () => {
    const thinking: Message[] = [
      { role: "user", content: [{ type: "text", text: "b" }] },
      { role: "assistant", content: [{ type: "thinking", thinking: "r".repeat(30_000) }] },
    ];
    const openai = new ContextKeeper(1000, { sendsThinking: false }).estimate(fixed, thinking);
    const anthropic = new ContextKeeper(1000, { sendsThinking: true }).estimate(fixed, thinking);
    expect(anthropic - openai).toBeGreaterThan(9000);
  });
});

describe("a41e held: single-call briefs", () => {
  it("a long quoted claim keeps its start within its share and says where the whole text is", () => {
    const q = quoteWithin(`START ${"\u0001".repeat(50_000)}`, 500, "state.json");
    expect(q.text.startsWith("START")).toBe(true);
    expect(q.note).toContain("state.json");
  });

  it("the history tail keeps its newest lines, with the note", () => {
    const lines = Array.from(
      { length: 400 },
      (_, i) => `{"event":"e${i}","detail":"${"d".repeat(40)}"}`,
    ).join("\n");
    const q = newestLines(lines, 500);
    expect(q.text.endsWith(`"e399","detail":"${"d".repeat(40)}"}`)).toBe(true);
    expect(q.note).toMatch(/left out the \d+ oldest of these 400 lines/);
  });
});
