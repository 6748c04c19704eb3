// OpenAI Chat Completions adapter (openai SDK), for OpenAI and every OpenAI-compatible server
// (vLLM, Ollama, LiteLLM) via baseURL. Cached tokens are part of prompt_tokens there, so they are
// subtracted from input: input + cacheRead = prompt_tokens, nothing counted twice.
import OpenAI from "openai";
import { freezeDeep, isFrozenDeep } from "../../frozen.ts";
import { ProviderError } from "../errors.ts";
import type { ContentBlock, Message, ModelRequest, StopReason, Usage } from "../types.ts";
import { type Provider, type ProviderCallOptions, type ProviderResult, replyOrigin } from "./provider.ts";
import { sdkClientOptions, sdkRequestOptions, sendSdkRequest, toolInputOf } from "./shared.ts";

type Body = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type WireMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

export interface OpenAIProviderOptions {
  model: string;
  apiKey: string;
  baseURL?: string;
  name?: string;
  reasoningEffort?: "minimal" | "low" | "medium" | "high";
  maxTokens?: number;
}

export class OpenAIProvider implements Provider {
  readonly name: string;
  readonly model: string;
  readonly #client: OpenAI;
  readonly #options: OpenAIProviderOptions;

  constructor(options: OpenAIProviderOptions) {
    this.name = options.name ?? "openai";
    this.model = options.model;
    this.#options = options;
    this.#client = new OpenAI(sdkClientOptions(options));
  }

  /** Chat Completions has no field for reasoning: thinking blocks are never sent back. */
  sendsThinking(): boolean {
    return false;
  }

  async call(request: ModelRequest, options: ProviderCallOptions): Promise<ProviderResult> {
    const body = buildOpenAIBody(request, this.#options);
    const reply = await sendSdkRequest(this.name, () =>
      this.#client.chat.completions.create(body, sdkRequestOptions(request, options)),
    );
    const choice = reply?.choices?.[0];
    if (!choice?.message)
      throw new ProviderError(`${this.name}: response has no choices[0].message`, "malformed");
    return {
      content: fromOpenAIMessage(choice.message),
      stopReason: mapFinishReason(choice.finish_reason),
      usage: mapUsage(reply.usage),
      wire: body,
      ...replyOrigin(reply),
    };
  }
}

export function buildOpenAIBody(request: ModelRequest, options: OpenAIProviderOptions): Body {
  const messages: WireMessage[] = [{ role: "system", content: request.system }];
  for (const message of request.messages) messages.push(...wireMessagesOf(message));
  if (request.workspaceContext) messages.push({ role: "user", content: request.workspaceContext });
  const body: Body = {
    model: options.model,
    messages,
    max_completion_tokens: request.maxTokens ?? options.maxTokens ?? 8192,
  };
  if (request.tools?.length) {
    body.tools = request.tools.map((tool) => ({
      type: "function",
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
  }
  if (request.jsonSchema) {
    body.response_format = {
      type: "json_schema",
      json_schema: { name: request.jsonSchema.name, schema: request.jsonSchema.schema },
    };
  }
  if (options.reasoningEffort) body.reasoning_effort = options.reasoningEffort;
  return body;
}

/** Wire forms of frozen history messages, converted once (see runner/frozen.ts). */
const wireMessages = new WeakMap<Message, readonly WireMessage[]>();

function wireMessagesOf(message: Message): readonly WireMessage[] {
  const cached = wireMessages.get(message);
  if (cached) return cached;
  const wire = toOpenAIMessages(message);
  if (isFrozenDeep(message)) wireMessages.set(message, freezeDeep(wire));
  return wire;
}

/** One neutral message may become several wire messages: tool results are messages of their own. */
function toOpenAIMessages(message: Message): WireMessage[] {
  const text = message.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("\n");
  if (message.role === "assistant") {
    const calls = message.content.flatMap((b) =>
      b.type === "tool_use"
        ? [
            {
              id: b.id,
              type: "function" as const,
              function: { name: b.name, arguments: JSON.stringify(b.input) },
            },
          ]
        : [],
    );
    // Thinking is not sent back: Chat Completions has no field for it.
    return [{ role: "assistant", content: text || null, ...(calls.length ? { tool_calls: calls } : {}) }];
  }
  const out: WireMessage[] = message.content.flatMap((b) =>
    b.type === "tool_result"
      ? [
          {
            role: "tool" as const,
            tool_call_id: b.toolUseId,
            content: b.isError ? `ERROR: ${b.content}` : b.content,
          },
        ]
      : [],
  );
  if (text) out.push({ role: "user", content: text });
  return out;
}

function fromOpenAIMessage(message: OpenAI.Chat.Completions.ChatCompletionMessage): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  // Non-standard field of vLLM/DeepSeek-style servers carrying the reasoning text.
  const reasoning = (message as { reasoning_content?: unknown }).reasoning_content;
  if (typeof reasoning === "string" && reasoning) blocks.push({ type: "thinking", thinking: reasoning });
  if (message.content) blocks.push({ type: "text", text: message.content });
  for (const call of message.tool_calls ?? []) {
    if (call.type !== "function") continue;
    blocks.push({
      type: "tool_use",
      id: call.id,
      name: call.function.name,
      input: parseArguments(call.function.arguments),
    });
  }
  return blocks;
}

function parseArguments(text: string): Record<string, unknown> {
  try {
    return toolInputOf(JSON.parse(text || "{}"));
  } catch {
    // The model produced broken JSON: hand it to the agent as-is so the tool layer can answer with an error.
    return { _unparsed_arguments: text };
  }
}

function mapFinishReason(reason: string | null | undefined): StopReason {
  switch (reason) {
    case "stop":
      return "end_turn";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "length":
      return "max_tokens";
    case "content_filter":
      return "refusal";
    default:
      return "other";
  }
}

function mapUsage(usage: OpenAI.CompletionUsage | undefined): Usage {
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    input: Math.max(0, (usage?.prompt_tokens ?? 0) - cached),
    output: usage?.completion_tokens ?? 0,
    cacheWrite: 0,
    cacheRead: cached,
    reasoning: usage?.completion_tokens_details?.reasoning_tokens ?? 0,
  };
}
