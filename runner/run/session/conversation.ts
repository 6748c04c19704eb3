// The step loop of a tool-using agent (work or review), with the orchestrator's limits applied
// between model calls. mini-swe-agent's shape: query -> execute -> repeat, ending in typed exits.

import { idScope, scopeIds } from "../../llm/tool-ids.ts";
import {
  type ContentBlock,
  ContextTooLong,
  type Message,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type ToolSpec,
} from "../../llm/types.ts";
import type { LimitConfig } from "../../run-folder/state.ts";
import { recallTool } from "../../tools/recall.ts";
import { runTool, type ToolSet, toolSpecs } from "../../tools/registry.ts";
import type { ToolContext, ToolSignal } from "../../tools/tool.ts";
import { type Compaction, ContextKeeper, capToBudget, type FixedPart, outputCap } from "./context-budget.ts";
import { PassLimits, type RunBudget } from "./limits.ts";

export type PassExit =
  | { type: "done"; claim: string; summary: string }
  | { type: "blocker"; reason: string; needs: string }
  /** The model answered with text and no tool call (the review's final answer). */
  | { type: "answer"; text: string; response: ModelResponse }
  /** A per-pass limit (steps, tool calls) ended the pass. */
  | { type: "limit"; reason: string }
  /** Told to report a blocker after consecutive failing steps, and did not. */
  | { type: "stalled"; reason: string }
  /** A run-wide budget (wall time, tokens, money) is spent. */
  | { type: "budget"; reason: string }
  /** The work model stopped calling tools twice in a row without reporting. */
  | { type: "idle"; reason: string };

export type PassEvent =
  | { type: "step"; step: number; limits: PassLimits }
  /** A tool call is about to run: `id` is its id in the run (the server's, scoped: scopeIds). */
  | { type: "tool_start"; role: string; id: string; name: string }
  | {
      type: "tool";
      name: string;
      ok: boolean;
      rejected: boolean;
      limits: PassLimits;
      /** What the tool got and gave back (calls that ran). */
      input?: unknown;
      output?: string;
      refused?: { rule: string; detail: string };
    }
  | { type: "limit"; limit: string; detail: string }
  | { type: "response"; response: ModelResponse }
  /**
   * The history was compacted to fit the context window: at a compaction point, or (`retried`)
   * after the provider refused the request as too long, before it is sent again once.
   */
  | { type: "context"; action: "compacted" | "retried"; budget: number; compaction: Compaction };

export interface PassOptions {
  model: Model;
  tools: ToolSet;
  toolContext: ToolContext;
  limits: LimitConfig;
  budget: RunBudget;
  request: Pick<ModelRequest, "role" | "kind" | "rank" | "system" | "injected" | "meta">;
  /** The first user message. */
  brief: string;
  /** Work: a text-only reply is nudged. Review: it is the answer. */
  textReply: "nudge" | "answer";
  /** Text for the nudge after `failingStepsBeforeBlocker` all-failing steps. */
  blockerNudge: (count: number) => string;
  onEvent?: (event: PassEvent) => void;
  signal?: AbortSignal;
  /**
   * Runs after every tool call (approval: [delete] compares the task folder with its start); a text
   * it returns is added to the call's result.
   */
  afterTool?: (name: string) => Promise<string | undefined>;
}

export interface PassResult {
  exit: PassExit;
  steps: number;
  toolCalls: number;
  messages: Message[];
}

const IDLE_NUDGE =
  "The runner: your reply had no tool call. Continue with the tools, call `report_done` when the Expectation is met and verified, or `report_blocker` if a human must act.";

export async function runPass(given: PassOptions): Promise<PassResult> {
  const limits = new PassLimits(given.limits);
  const messages: Message[] = [{ role: "user", content: [{ type: "text", text: given.brief }] }];
  // A model with a known window: the history is kept inside it, and elided outputs can be recalled.
  const budget = given.model.contextBudget?.(given.request.kind, given.request.rank);
  const model = given.model;
  // An output elided before any request carried it goes on the tape first (its placeholder says
  // where). Only the newest results are unsent: their calls came in the step before this request's.
  const record = model.recordOutput
    ? (callId: string, text: string) => {
        const { role, meta } = given.request;
        const step = limits.steps - 1;
        model.recordOutput?.({ role, callId, text, iteration: meta.iteration, step });
        return true;
      }
    : undefined;
  const sendsThinking = model.sendsThinking?.(given.request.kind, given.request.rank) ?? true;
  const keeper =
    budget !== undefined
      ? new ContextKeeper(budget, { sendsThinking, ...(record ? { record } : {}) })
      : undefined;
  const options: PassOptions = keeper
    ? {
        ...given,
        tools: new Map([...given.tools, [recallTool.name, recallTool]]),
        toolContext: {
          ...given.toolContext,
          // One output may hold a quarter of the budget: a build log never fills a small window alone.
          maxOutputChars: Math.min(given.toolContext.maxOutputChars, outputCap(keeper.budget)),
          // ...measured as the budget is (JSON bytes), so binary output and its recall fit too.
          capOutput: (text) => capToBudget(text, keeper.budget),
          recall: (id) => keeper.recall(id),
        },
      }
    : given;
  const finish = (exit: PassExit): PassResult => ({
    exit,
    steps: limits.steps,
    toolCalls: limits.toolCalls,
    messages,
  });
  let nudgedForBlocker = false;
  let idleReplies = 0;
  // Ids used in the pass: the gateway keeps them unique in the run already; any other model too.
  const ids = new Set<string>();
  const tools = toolSpecs(options.tools);

  for (;;) {
    const spent = options.budget.exhausted();
    if (spent) return finish({ type: "budget", reason: spent });
    const stop = limits.beforeStep();
    if (stop) {
      options.onEvent?.({ type: "limit", limit: "pass", detail: stop });
      return finish({ type: "limit", reason: stop });
    }
    options.onEvent?.({ type: "step", step: limits.steps, limits });
    const context = workspaceContext(limits, options.budget);
    const scope = idScope(options.request.role, options.request.meta.iteration, limits.steps);
    const response = await complete(options, keeper, messages, scope, {
      system: options.request.system,
      tools,
      workspaceContext: context,
    });
    options.budget.add(totalTokens(response), response.costUsd);
    options.onEvent?.({ type: "response", response });
    const content = scopeIds(response.content, scope, ids);
    messages.push({ role: "assistant", content });

    const calls = content.filter(
      (b): b is Extract<ContentBlock, { type: "tool_use" }> => b.type === "tool_use",
    );
    if (calls.length === 0) {
      if (options.textReply === "answer") return finish({ type: "answer", text: textOf(response), response });
      if (++idleReplies >= 2)
        return finish({ type: "idle", reason: "the work model stopped using tools without reporting" });
      messages.push({ role: "user", content: [{ type: "text", text: IDLE_NUDGE }] });
      continue;
    }
    idleReplies = 0;

    const { results, signal } = await runCalls(calls, limits, options);
    const needsBlocker = limits.endStep();
    if (signal) {
      messages.push({ role: "user", content: results });
      return finish(signal.type === "done" ? { ...signal } : { ...signal });
    }
    if (nudgedForBlocker && limits.failingSteps > 0) {
      messages.push({ role: "user", content: results });
      const reason = `told to report a blocker after ${limits.failingSteps} failing steps, and did not`;
      options.onEvent?.({ type: "limit", limit: "failing_steps", detail: reason });
      return finish({ type: "stalled", reason });
    }
    nudgedForBlocker = false;
    if (needsBlocker) {
      nudgedForBlocker = true;
      options.onEvent?.({
        type: "limit",
        limit: "failing_steps",
        detail: `${limits.failingSteps} consecutive steps failed; the agent is told to report a blocker`,
      });
      results.push({ type: "text", text: options.blockerNudge(limits.failingSteps) } as ContentBlock);
    }
    messages.push({ role: "user", content: results });
  }
}

/**
 * One call with the history kept inside the window: compacted first when it nears the budget, and
 * when the provider still refuses it as too long, compacted harder and sent again once (a second
 * refusal ends the run as before, RequestRefused).
 */
async function complete(
  options: PassOptions,
  keeper: ContextKeeper | undefined,
  messages: Message[],
  toolIdScope: string,
  fixed: FixedPart & { tools: ToolSpec[] },
): Promise<ModelResponse> {
  const send = () =>
    options.model.complete(
      {
        ...options.request,
        messages,
        tools: fixed.tools,
        workspaceContext: fixed.workspaceContext,
        toolIdScope,
        ...(keeper ? { contextBudget: keeper.budget } : {}),
        ...(keeper && !keeper.sendsThinking ? { thinkingDropped: true as const } : {}),
      },
      options.signal,
    );
  if (!keeper) return send();
  const compact = (action: "compacted" | "retried") => {
    const compaction = keeper.fit(fixed, messages, action === "retried");
    if (!compaction) return false;
    messages.splice(0, messages.length, ...compaction.messages);
    options.onEvent?.({ type: "context", action, budget: keeper.budget, compaction });
    return true;
  };
  compact("compacted");
  keeper.check(fixed, messages);
  let response: ModelResponse;
  try {
    response = await send();
  } catch (error) {
    if (!(error instanceof ContextTooLong)) throw error;
    keeper.refused(fixed, messages);
    if (!compact("retried")) throw error;
    keeper.check(fixed, messages);
    response = await send();
  }
  keeper.sent(messages, response.seq);
  return response;
}

async function runCalls(
  calls: Extract<ContentBlock, { type: "tool_use" }>[],
  limits: PassLimits,
  options: PassOptions,
): Promise<{ results: ContentBlock[]; signal?: ToolSignal }> {
  const results: ContentBlock[] = [];
  let signal: ToolSignal | undefined;
  for (const call of calls) {
    if (signal) {
      results.push({
        type: "tool_result",
        toolUseId: call.id,
        content: "Not run: the pass ended with the call before.",
        isError: true,
      });
      continue;
    }
    const tool = options.tools.get(call.name);
    const request = { name: call.name, input: call.input, effect: tool?.effect ?? ("unknown" as const) };
    const rejection = tool ? limits.admit(request) : undefined;
    if (rejection) {
      limits.record(request, false);
      options.onEvent?.({ type: "limit", limit: "tool_call", detail: `${call.name}: ${rejection}` });
      options.onEvent?.({ type: "tool", name: call.name, ok: false, rejected: true, limits });
      results.push({ type: "tool_result", toolUseId: call.id, content: rejection, isError: true });
      continue;
    }
    options.onEvent?.({ type: "tool_start", role: options.request.role, id: call.id, name: call.name });
    const outcome = await runTool(options.tools, call.name, call.input, options.toolContext);
    // The tool's own result (a refusal in it) is judged before the runner's notice is added.
    const own = outcome.output;
    const after = await options.afterTool?.(call.name);
    if (after) outcome.output = `${outcome.output}\n\n${after}`;
    limits.record(request, outcome.ok);
    options.onEvent?.({
      type: "tool",
      name: call.name,
      ok: outcome.ok,
      rejected: false,
      limits,
      input: call.input,
      output: own,
      ...(outcome.refused ? { refused: outcome.refused } : {}),
    });
    results.push({ type: "tool_result", toolUseId: call.id, content: outcome.output, isError: !outcome.ok });
    signal = outcome.signal;
  }
  return { results, signal };
}

/**
 * Steps and budgets, counted in steps, tokens and money only: no elapsed wall time, which differs
 * between two runs of the same task (a replay must send the same prompt). The wall-time limit is
 * stated; the runner enforces it.
 */
function workspaceContext(limits: PassLimits, budget: RunBudget): string {
  const c = budget.config;
  return [
    `Step ${limits.steps} of ${c.stepsPerPass}; tool calls left in this pass: ${limits.toolCallsLeft()}.`,
    `Run budget used: ${budget.tokens} of ${c.tokens} tokens, USD ${budget.usd.toFixed(4)} of ${c.usd}; the run's wall-time limit is ${c.walltimeSec} s (commands are stopped at it).`,
  ].join("\n");
}

export function totalTokens(response: ModelResponse): number {
  const u = response.usage;
  return u.input + u.output + u.cacheRead + u.cacheWrite;
}

function textOf(response: ModelResponse): string {
  return response.content
    .map((b) => (b.type === "text" ? b.text : ""))
    .join("")
    .trim();
}
