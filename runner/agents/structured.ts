// A control-agent call whose answer must be JSON matching a zod schema. A malformed reply is retried
// once with the validation error shown to the model; a second failure is a typed error that fails
// the iteration.
import type { z } from "zod";
import type { Message, Model, ModelRequest, ModelResponse } from "../llm/types.ts";
import { RunEnding } from "../run-ending.ts";
import { jsonSchemaOf } from "../tools/tool.ts";

export class MalformedReply extends RunEnding {
  override name = "MalformedReply";
  readonly role: string;
  constructor(role: string, detail: string) {
    super(`the ${role} agent's reply was not valid JSON for its schema, twice: ${detail}`, {
      status: "failed",
      limit: "agent_reply",
    });
    this.role = role;
  }
}

export interface StructuredResult<T> {
  value: T;
  responses: ModelResponse[];
}

export async function structuredCall<S extends z.ZodObject>(
  model: Model,
  request: Omit<ModelRequest, "jsonSchema">,
  schema: S,
  schemaName: string,
  onResponse?: (response: ModelResponse) => void,
): Promise<StructuredResult<z.infer<S>>> {
  const jsonSchema = { name: schemaName, schema: jsonSchemaOf(schema) };
  const responses: ModelResponse[] = [];
  let messages = request.messages;
  let lastError = "";
  for (let attempt = 0; attempt < 2; attempt++) {
    let reply: { response?: ModelResponse; raw: string; value?: unknown; error?: string };
    try {
      const response = await model.complete({ ...request, messages, jsonSchema });
      responses.push(response);
      onResponse?.(response);
      const raw = replyText(response);
      reply = { response, raw, value: response.json ?? parseJsonText(raw) };
    } catch (error) {
      if (!(error instanceof Error) || error.name !== "StructuredOutputError") throw error;
      reply = { raw: (error as Error & { raw?: string }).raw ?? "", error: error.message };
    }
    if (reply.error === undefined) {
      const parsed = schema.safeParse(reply.value);
      if (parsed.success) return { value: parsed.data, responses };
      reply.error = parsed.error.issues
        .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
        .join("; ");
    }
    lastError = reply.error;
    messages = [...messages, ...retryMessages(reply.raw, reply.error)];
  }
  throw new MalformedReply(request.role, lastError);
}

function retryMessages(raw: string, error: string): Message[] {
  return [
    { role: "assistant", content: [{ type: "text", text: raw || "(empty reply)" }] },
    {
      role: "user",
      content: [
        {
          type: "text",
          text: `Your reply was rejected: ${error}\nAnswer again with one JSON object matching the schema, and nothing else.`,
        },
      ],
    },
  ];
}

export function replyText(response: ModelResponse): string {
  return response.content
    .filter((b) => b.type === "text")
    .map((b) => (b.type === "text" ? b.text : ""))
    .join("")
    .trim();
}

/** JSON from a reply text, tolerating a Markdown fence; undefined when it does not parse. */
export function parseJsonText(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)\s*```/.exec(text);
  try {
    return JSON.parse(fenced?.[1] ?? text);
  } catch {
    return undefined;
  }
}
