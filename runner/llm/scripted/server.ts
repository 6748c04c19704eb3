// The scripted model: a real HTTP server on 127.0.0.1 that speaks the Anthropic Messages
// (`POST /v1/messages`) and OpenAI Chat Completions (`POST /v1/chat/completions`) wire formats and
// answers from a YAML script (see script.ts, docs/models.md). The real SDKs talk to it over HTTP, so
// tests and demos exercise the same code paths as production. It is labelled scripted everywhere.
//
// The agent role comes from the `x-scifi-role` header (the providers set it); each role has its own
// queue. A request for an exhausted queue or one that fails an `expect` is answered with HTTP 400
// and a message naming the script file and line, which fails the run.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { basename } from "node:path";
import { estimateTokens, PrefixCache } from "../../audit/prefix-cache.ts";
import { sha256 } from "../../sha256.ts";
import { windowRefusal } from "./context.ts";
import { ROLE_HEADER } from "./protocol.ts";
import { loadScript, type Script, type ScriptEntry, type ScriptReply } from "./script.ts";

export { ROLE_HEADER };

type Json = Record<string, unknown>;
type WireFormat = "anthropic" | "openai";

interface HttpAnswer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** A request the script cannot answer: becomes an HTTP 400 naming the script line. */
class ScriptMismatch extends Error {}

/** Signature the scripted model puts on its thinking blocks and checks when they come back. */
export function thinkingSignature(thinking: string): string {
  return `scripted-sig-${sha256(`scifi-scripted:${thinking}`, "base64url")}`;
}

export class ScriptedServer {
  readonly script: Script;
  readonly #server: Server;
  readonly #cursors = new Map<string, number>();
  readonly #cache = new PrefixCache();
  #counter = 0;
  #refusedForLength = 0;
  #baseURL = "";

  private constructor(script: Script) {
    this.script = script;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((error: unknown) => {
        send(res, { status: 500, body: JSON.stringify({ error: { message: String(error) } }) });
      });
    });
  }

  /**
   * Starts a server for a script file (or an already parsed script) on a random local port.
   * `skip`: replies per role already used (a resumed run continues each queue where it stopped).
   */
  static async start(
    script: string | Script,
    options: { skip?: Readonly<Record<string, number>> } = {},
  ): Promise<ScriptedServer> {
    const server = new ScriptedServer(typeof script === "string" ? loadScript(script) : script);
    for (const [role, used] of Object.entries(options.skip ?? {})) {
      if (used > 0) server.#cursors.set(role, used);
    }
    await new Promise<void>((resolve, reject) => {
      server.#server.once("error", reject);
      server.#server.listen(0, "127.0.0.1", () => resolve());
    });
    const { port } = server.#server.address() as AddressInfo;
    server.#baseURL = `http://127.0.0.1:${port}`;
    return server;
  }

  /** Base URL for the Anthropic SDK; the OpenAI SDK takes `${baseURL}/v1`. */
  get baseURL(): string {
    return this.#baseURL;
  }

  /** Replies not yet used, per role (a finished demo should have none left). */
  remaining(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [role, queue] of this.script.queues) out[role] = queue.length - (this.#cursors.get(role) ?? 0);
    return out;
  }

  /** Requests refused for passing the script's `context_window` (tests read it). */
  get refusedForLength(): number {
    return this.#refusedForLength;
  }

  async close(): Promise<void> {
    // Hung requests keep sockets open; drop them so close() returns.
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const format = formatOf(req);
    const raw = await readBody(req);
    if (!format) {
      send(
        res,
        errorAnswer("openai", 404, "not_found_error", `scripted model: no route ${req.method} ${req.url}`),
      );
      return;
    }
    let body: Json;
    try {
      body = JSON.parse(raw) as Json;
    } catch {
      send(
        res,
        errorAnswer(format, 400, "invalid_request_error", "scripted model: request body is not JSON"),
      );
      return;
    }
    // Past the window the provider refuses before any model sees the request: no reply is used.
    const window = this.script.contextWindow;
    const refusal = window === undefined ? undefined : windowRefusal(format, body, window);
    if (refusal) {
      this.#refusedForLength++;
      send(res, refusal);
      return;
    }
    let entry: ScriptEntry;
    try {
      entry = this.#next(format, req, body);
    } catch (error) {
      if (!(error instanceof ScriptMismatch)) throw error;
      send(res, errorAnswer(format, 400, "invalid_request_error", error.message));
      return;
    }
    const reply = entry.reply;
    if (reply.delay_ms) await sleep(reply.delay_ms);
    if (reply.hang) return; // never answer; the client times out
    if (reply.malformed) {
      send(res, { status: 200, body: '{"id":"scripted-malformed","content":[{"type":"te' });
      return;
    }
    if (reply.status !== undefined) {
      send(res, faultAnswer(format, reply, entry.line, this.script.file));
      return;
    }
    const answer =
      format === "anthropic" ? this.#anthropicReply(body, reply) : this.#openaiReply(body, reply);
    // Which reply of the script this is, so a reply that does not fit can be named by its line.
    answer.scifi_script = `${basename(this.script.file)}:${entry.line}`;
    send(res, { status: 200, body: JSON.stringify(answer) });
  }

  /** Takes the next reply of the request's role and checks the request against it. */
  #next(format: WireFormat, req: IncomingMessage, body: Json): ScriptEntry {
    const role = roleOf(req, body);
    const file = this.script.file;
    if (!role) {
      throw new ScriptMismatch(
        `scripted model (${file}): request carries no '${ROLE_HEADER}' header, so no role queue can answer it`,
      );
    }
    const queue = this.script.queues.get(role);
    const cursor = this.#cursors.get(role) ?? 0;
    if (!queue) {
      throw new ScriptMismatch(
        `scripted model: ${file} has no replies for role '${role}'; add a '${role}:' list`,
      );
    }
    const entry = queue[cursor];
    if (!entry) {
      throw new ScriptMismatch(
        `scripted model: ${file}:${this.script.roleLines.get(role)}: role '${role}' has no reply left (all ${queue.length} used; call ${cursor + 1} for this role was not scripted)`,
      );
    }
    this.#cursors.set(role, cursor + 1);
    checkExpect(entry, requestText(body), file, role);
    if (format === "anthropic") checkThinkingSignatures(body, entry, file);
    checkToolResultsAnswerCalls(format, body, entry, file);
    return entry;
  }

  #anthropicReply(body: Json, reply: ScriptReply): Json {
    const n = ++this.#counter;
    const content: Json[] = [];
    if (reply.thinking !== undefined) {
      content.push({
        type: "thinking",
        thinking: reply.thinking,
        signature: thinkingSignature(reply.thinking),
      });
    }
    const text = replyText(reply);
    if (text !== undefined) content.push({ type: "text", text, citations: null });
    (reply.tool_calls ?? []).forEach((call, i) => {
      content.push({ type: "tool_use", id: `toolu_scripted_${n}_${i}`, name: call.name, input: call.input });
    });
    const cache = this.#cache.accountAnthropic(body, String(body.model ?? ""));
    const output = reply.usage?.output ?? outputTokens(reply);
    const reasoning = reply.usage?.reasoning ?? estimateTokens(reply.thinking ?? "");
    return {
      id: `msg_scripted_${n}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content,
      stop_reason: reply.stop ?? (reply.tool_calls?.length ? "tool_use" : "end_turn"),
      stop_sequence: null,
      usage: {
        input_tokens: reply.usage?.input ?? cache.input,
        output_tokens: output,
        cache_creation_input_tokens: reply.usage?.cache_write ?? cache.cacheWrite,
        cache_read_input_tokens: reply.usage?.cache_read ?? cache.cacheRead,
        output_tokens_details: { thinking_tokens: reasoning },
        service_tier: "standard",
      },
    };
  }

  #openaiReply(body: Json, reply: ScriptReply): Json {
    const n = ++this.#counter;
    const cache = this.#cache.accountOpenAI(body, String(body.model ?? ""));
    const cached = reply.usage?.cache_read ?? cache.cacheRead;
    const prompt = (reply.usage?.input ?? cache.input) + cached;
    const output = reply.usage?.output ?? outputTokens(reply);
    const toolCalls = (reply.tool_calls ?? []).map((call, i) => ({
      id: `call_scripted_${n}_${i}`,
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.input) },
    }));
    const message: Json = { role: "assistant", content: replyText(reply) ?? null, refusal: null };
    if (toolCalls.length > 0) message.tool_calls = toolCalls;
    // vLLM and other OpenAI-compatible servers return reasoning text in this non-standard field.
    if (reply.thinking !== undefined) message.reasoning_content = reply.thinking;
    const finish = { end_turn: "stop", max_tokens: "length", refusal: "content_filter" } as const;
    return {
      id: `chatcmpl-scripted-${n}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [
        {
          index: 0,
          message,
          finish_reason: reply.stop ? finish[reply.stop] : toolCalls.length > 0 ? "tool_calls" : "stop",
          logprobs: null,
        },
      ],
      usage: {
        prompt_tokens: prompt,
        completion_tokens: output,
        total_tokens: prompt + output,
        prompt_tokens_details: { cached_tokens: cached },
        completion_tokens_details: {
          reasoning_tokens: reply.usage?.reasoning ?? estimateTokens(reply.thinking ?? ""),
        },
      },
    };
  }
}

function formatOf(req: IncomingMessage): WireFormat | undefined {
  const path = (req.url ?? "").split("?")[0];
  if (req.method !== "POST") return undefined;
  if (path === "/v1/messages") return "anthropic";
  if (path === "/v1/chat/completions") return "openai";
  return undefined;
}

function roleOf(req: IncomingMessage, body: Json): string | undefined {
  const header = req.headers[ROLE_HEADER];
  if (typeof header === "string" && header !== "") return header;
  // Fallback for clients that cannot set headers: metadata.user_id = "scifi-role:<role>".
  const userId = (body.metadata as Json | undefined)?.user_id;
  if (typeof userId === "string" && userId.startsWith("scifi-role:"))
    return userId.slice("scifi-role:".length);
  return undefined;
}

function replyText(reply: ScriptReply): string | undefined {
  if (reply.json !== undefined) return JSON.stringify(reply.json);
  return reply.text;
}

function outputTokens(reply: ScriptReply): number {
  const parts = [
    replyText(reply) ?? "",
    reply.thinking ?? "",
    ...(reply.tool_calls ?? []).map((c) => JSON.stringify(c)),
  ];
  return Math.max(1, estimateTokens(parts.join("")));
}

/** Every string in the prompt (system, messages, tool results), for `expect`. */
function requestText(body: Json): string {
  const out: string[] = [];
  const walk = (value: unknown): void => {
    if (typeof value === "string") out.push(value);
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") Object.values(value).forEach(walk);
  };
  walk(body.system);
  walk(body.messages);
  return out.join("\n");
}

function checkExpect(entry: ScriptEntry, text: string, file: string, role: string): void {
  const expected = entry.reply.expect;
  if (expected === undefined) return;
  for (const item of Array.isArray(expected) ? expected : [expected]) {
    const found = typeof item === "string" ? text.includes(item) : new RegExp(item.regex).test(text);
    if (!found) {
      const what = typeof item === "string" ? JSON.stringify(item) : `/${item.regex}/`;
      throw new ScriptMismatch(
        `scripted model: ${file}:${entry.line}: the '${role}' request does not contain ${what} (expect failed; the prompt ends: ${JSON.stringify(text.slice(-200))})`,
      );
    }
  }
}

/** Like the real API: thinking blocks must come back unmodified, with the signature they were sent with. */
function checkThinkingSignatures(body: Json, entry: ScriptEntry, file: string): void {
  for (const message of Array.isArray(body.messages) ? (body.messages as Json[]) : []) {
    if (message.role !== "assistant" || !Array.isArray(message.content)) continue;
    for (const block of message.content as Json[]) {
      if (block.type !== "thinking") continue;
      if (block.signature !== thinkingSignature(String(block.thinking))) {
        throw new ScriptMismatch(
          `scripted model: ${file}:${entry.line}: a thinking block in the history was modified or lost its signature (thinking blocks must be passed back unmodified)`,
        );
      }
    }
  }
}

/**
 * Like the real APIs: a tool result must answer a tool call of the assistant message right before
 * it. Catches agent loops that lose or reorder history.
 */
function checkToolResultsAnswerCalls(format: WireFormat, body: Json, entry: ScriptEntry, file: string): void {
  const messages = Array.isArray(body.messages) ? (body.messages as Json[]) : [];
  let open = new Set<string>();
  for (const [index, message] of messages.entries()) {
    const parts = Array.isArray(message.content) ? (message.content as Json[]) : [];
    if (message.role === "assistant") {
      const calls =
        format === "anthropic"
          ? parts.filter((p) => p.type === "tool_use").map((p) => String(p.id))
          : ((message.tool_calls as Json[] | undefined) ?? []).map((c) => String(c.id));
      open = new Set(calls);
      continue;
    }
    const answered =
      format === "anthropic"
        ? parts.filter((p) => p.type === "tool_result").map((p) => String(p.tool_use_id))
        : message.role === "tool"
          ? [String(message.tool_call_id)]
          : [];
    for (const id of answered) {
      if (!open.has(id)) {
        throw new ScriptMismatch(
          `scripted model: ${file}:${entry.line}: invalid request: messages.${index} has a tool result for '${id}', which the assistant message before it did not call`,
        );
      }
    }
    if (format === "anthropic" || message.role !== "tool") open = new Set();
  }
}

function faultAnswer(format: WireFormat, reply: ScriptReply, line: number, file: string): HttpAnswer {
  const status = reply.status ?? 500;
  const type =
    status === 429
      ? "rate_limit_error"
      : status === 529
        ? "overloaded_error"
        : status >= 500
          ? "api_error"
          : "invalid_request_error";
  const message = reply.message ?? `scripted fault from ${file}:${line} (HTTP ${status})`;
  const answer = errorAnswer(format, status, type, message);
  if (reply.retry_after !== undefined) answer.headers = { "retry-after": String(reply.retry_after) };
  return answer;
}

function errorAnswer(format: WireFormat, status: number, type: string, message: string): HttpAnswer {
  const body =
    format === "anthropic"
      ? { type: "error", error: { type, message } }
      : { error: { message, type, code: null, param: null } };
  return { status, body: JSON.stringify(body) };
}

function send(res: ServerResponse, answer: HttpAnswer): void {
  if (res.headersSent) return;
  res.writeHead(answer.status, {
    "content-type": "application/json",
    "request-id": `req_scripted_${Date.now()}`,
    ...answer.headers,
  });
  res.end(answer.body);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
