// Anthropic Messages API adapter (@anthropic-ai/sdk). Prompt caching: breakpoints on the system
// prompt, on the last tool, on the end of the previous turn and on the last history message; the
// per-step workspace context goes after the last breakpoint so it never invalidates the cache. Thinking blocks (with signature)
// are kept in the response and sent back unmodified in later assistant turns, as the API requires.
import Anthropic from "@anthropic-ai/sdk";
import { freezeDeep, isFrozenDeep } from "../../frozen.ts";
import { ProviderError } from "../errors.ts";
import type { ContentBlock, Message, ModelRequest, StopReason, ToolSpec, Usage } from "../types.ts";
import { type Provider, type ProviderCallOptions, type ProviderResult, replyOrigin } from "./provider.ts";
import { sdkClientOptions, sdkRequestOptions, sendSdkRequest, toolInputOf } from "./shared.ts";

type Body = Anthropic.MessageCreateParamsNonStreaming;
type BlockParam = Anthropic.ContentBlockParam;

/** How the model thinks: adaptive (the model decides), a fixed budget, or off. */
export type AnthropicThinking =
  | { type: "adaptive"; display?: "summarized" | "omitted" }
  | { type: "enabled"; budgetTokens: number; display?: "summarized" | "omitted" }
  | { type: "disabled" };

export interface AnthropicProviderOptions {
  model: string;
  apiKey: string;
  baseURL?: string;
  /** Name on the tape (default "anthropic"; the scripted model uses "scripted"). */
  name?: string;
  thinking?: AnthropicThinking;
  /** output_config.effort, where the model supports it. */
  effort?: "low" | "medium" | "high" | "xhigh" | "max";
  maxTokens?: number;
}

const EPHEMERAL = { type: "ephemeral" } as const;

export class AnthropicProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly #client: Anthropic;
  readonly #options: AnthropicProviderOptions;

  constructor(options: AnthropicProviderOptions) {
    this.name = options.name ?? "anthropic";
    this.model = options.model;
    this.#options = options;
    this.#client = new Anthropic(sdkClientOptions(options));
  }

  async call(request: ModelRequest, options: ProviderCallOptions): Promise<ProviderResult> {
    const body = buildAnthropicBody(request, this.#options);
    const reply = await sendSdkRequest(this.name, () =>
      this.#client.messages.create(body, sdkRequestOptions(request, options)),
    );
    if (!reply || !Array.isArray(reply.content)) {
      throw new ProviderError(`${this.name}: response has no content array`, "malformed");
    }
    return {
      content: reply.content.flatMap(fromAnthropicBlock),
      stopReason: mapStopReason(reply.stop_reason),
      usage: mapUsage(reply.usage),
      wire: body,
      ...replyOrigin(reply),
    };
  }
}

/** The exact Messages API body for a neutral request (exported for tests and the benchmark). */
export function buildAnthropicBody(request: ModelRequest, options: AnthropicProviderOptions): Body {
  const body: Body = {
    model: options.model,
    max_tokens: request.maxTokens ?? options.maxTokens ?? 8192,
    system: [{ type: "text", text: request.system, cache_control: EPHEMERAL }],
    messages: withWorkspaceContext(historyWithBreakpoint(request.messages), request.workspaceContext),
  };
  if (request.tools?.length) {
    const tools = request.tools.map(toWireTool);
    const last = tools.length - 1;
    tools[last] = { ...(tools[last] as Anthropic.Tool), cache_control: EPHEMERAL };
    body.tools = tools;
  }
  const thinking = thinkingParam(options.thinking);
  if (thinking) body.thinking = thinking;
  if (request.jsonSchema || options.effort) {
    body.output_config = {
      ...(options.effort ? { effort: options.effort } : {}),
      ...(request.jsonSchema ? { format: { type: "json_schema", schema: request.jsonSchema.schema } } : {}),
    };
  }
  return body;
}

function thinkingParam(thinking: AnthropicThinking | undefined): Anthropic.ThinkingConfigParam | undefined {
  if (!thinking) return undefined;
  if (thinking.type === "enabled") {
    return {
      type: "enabled",
      budget_tokens: thinking.budgetTokens,
      display: thinking.display ?? "summarized",
    };
  }
  if (thinking.type === "adaptive") return { type: "adaptive", display: thinking.display ?? "summarized" };
  return { type: "disabled" };
}

/**
 * History in wire format with cache breakpoints on the last block of the last message and on the
 * end of the previous turn (the user message before the last assistant message). The previous
 * request wrote its cache entry there, and the API looks only 20 blocks back from a breakpoint:
 * without the second breakpoint a turn that adds more blocks (parallel tool calls and their
 * results) would miss that entry and write the whole history again. With tools and system this
 * makes four breakpoints, the API's maximum.
 */
function historyWithBreakpoint(messages: Message[]): Anthropic.MessageParam[] {
  const wire = messages.map(toWireMessage);
  const lastAssistant = wire.findLastIndex((m) => m.role === "assistant");
  const previousTurn = lastAssistant - 1;
  if (lastAssistant > 0 && lastAssistant < wire.length - 1 && wire[previousTurn]?.role === "user")
    withBreakpoint(wire, previousTurn);
  withBreakpoint(wire, wire.length - 1);
  return wire;
}

/**
 * Wire forms of frozen history messages and tool specs (see runner/frozen.ts), converted once:
 * a long session then builds each body from the same objects instead of converting its whole
 * history again, and the audit tape finds the shared prefix by identity. Breakpoints and the
 * workspace context go onto copies, never onto these.
 */
const wireMessages = new WeakMap<Message, Anthropic.MessageParam>();
const wireTools = new WeakMap<ToolSpec, Anthropic.Tool>();

function toWireMessage(message: Message): Anthropic.MessageParam {
  const cached = wireMessages.get(message);
  if (cached) return cached;
  const wire = { role: message.role, content: message.content.flatMap(toAnthropicBlock) };
  if (isFrozenDeep(message)) wireMessages.set(message, freezeDeep(wire));
  return wire;
}

function toWireTool(tool: ToolSpec): Anthropic.Tool {
  const cached = wireTools.get(tool);
  if (cached) return cached;
  const wire: Anthropic.Tool = {
    name: tool.name,
    description: tool.description,
    input_schema: tool.inputSchema as Anthropic.Tool.InputSchema,
  };
  if (isFrozenDeep(tool)) wireTools.set(tool, freezeDeep(wire));
  return wire;
}

/**
 * Replaces wire[index] by a copy with a cache breakpoint on its last block (thinking blocks cannot
 * carry one); the converted message itself is shared across calls and never changed.
 */
function withBreakpoint(wire: Anthropic.MessageParam[], index: number): void {
  const message = wire[index];
  if (!message || !Array.isArray(message.content)) return;
  const content = message.content;
  const lastBlock = content[content.length - 1];
  if (!lastBlock || lastBlock.type === "thinking" || lastBlock.type === "redacted_thinking") return;
  const marked = { ...lastBlock, cache_control: EPHEMERAL } as BlockParam;
  wire[index] = { ...message, content: [...content.slice(0, -1), marked] } as Anthropic.MessageParam;
}

/** Appends the workspace context as a final user text block, after the last breakpoint. */
function withWorkspaceContext(
  messages: Anthropic.MessageParam[],
  context: string | undefined,
): Anthropic.MessageParam[] {
  if (!context) return messages;
  const block: Anthropic.TextBlockParam = { type: "text", text: context };
  const last = messages[messages.length - 1];
  if (last?.role === "user" && Array.isArray(last.content)) {
    messages[messages.length - 1] = { ...last, content: [...last.content, block] };
    return messages;
  }
  return [...messages, { role: "user", content: [block] }];
}

function toAnthropicBlock(block: ContentBlock): BlockParam[] {
  switch (block.type) {
    case "text":
      return [{ type: "text", text: block.text }];
    case "thinking":
      // Without its signature the API rejects a thinking block; a block from another provider has none.
      return block.signature
        ? [{ type: "thinking", thinking: block.thinking, signature: block.signature }]
        : [];
    case "tool_use":
      return [{ type: "tool_use", id: block.id, name: block.name, input: block.input }];
    case "tool_result":
      return [
        {
          type: "tool_result",
          tool_use_id: block.toolUseId,
          content: block.content,
          ...(block.isError ? { is_error: true } : {}),
        },
      ];
  }
}

function fromAnthropicBlock(block: Anthropic.ContentBlock): ContentBlock[] {
  switch (block.type) {
    case "text":
      return [{ type: "text", text: block.text }];
    case "thinking":
      return [{ type: "thinking", thinking: block.thinking, signature: block.signature }];
    case "tool_use":
      return [{ type: "tool_use", id: block.id, name: block.name, input: toolInputOf(block.input) }];
    default:
      return [];
  }
}

function mapStopReason(reason: Anthropic.StopReason | null): StopReason {
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      return "end_turn";
    case "tool_use":
      return "tool_use";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "max_tokens";
    case "refusal":
      return "refusal";
    default:
      return "other";
  }
}

function mapUsage(usage: Anthropic.Usage | undefined): Usage {
  return {
    input: usage?.input_tokens ?? 0,
    output: usage?.output_tokens ?? 0,
    cacheWrite: usage?.cache_creation_input_tokens ?? 0,
    cacheRead: usage?.cache_read_input_tokens ?? 0,
    reasoning: usage?.output_tokens_details?.thinking_tokens ?? 0,
  };
}
