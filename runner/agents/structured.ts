// A control-agent call whose answer must be JSON matching a zod schema. A malformed reply is retried
// once with the validation error shown to the model; a second failure is a typed error that fails
// the iteration. A request the provider refuses as too long is built again under 80 % of its
// estimate and sent once more, as a pass's is (runner/agents/refused-brief.ts).
import type { z } from "zod";
import { unknownKeysNote } from "../llm/providers/structured.ts";
import {
  ContextTooLong,
  type Message,
  type Model,
  type ModelRequest,
  type ModelResponse,
} from "../llm/types.ts";
import { RunEnding } from "../run-ending.ts";
import { jsonSchemaOf } from "../tools/tool.ts";
import { assertFits, type BriefPart, budgetFor, quoteShare } from "./brief-budget.ts";
import { type Brief, type BriefOptions, estimateOf, loweredBudget, shortenedBrief } from "./refused-brief.ts";

export class MalformedReply extends RunEnding {
  override name = "MalformedReply";
  readonly role: string;
  constructor(role: string, message: string) {
    super(message, { status: "failed", limit: "agent_reply" });
    this.role = role;
  }

  /** Both replies did not fit: each named by where it came from (a script line) and its problems. */
  static twice(role: string, first: string, second: string): MalformedReply {
    return new MalformedReply(
      role,
      `the ${role} agent's reply was not valid JSON for its schema, twice: ${first}; the retry: ${second}${SHAPES}`,
    );
  }
}

/**
 * A reply that did not fit, whose retry got no scripted reply at all: the script is wrong, so the run
 * ends here (another iteration would meet the same script) with the reply that did not fit as cause.
 */
export class UnfitScriptedReply extends RunEnding {
  override name = "UnfitScriptedReply";
  constructor(role: string, first: string, error: Error) {
    super(
      `the ${role} agent's reply did not fit its schema: ${first}; the retry got no answer: ${error.message}${SHAPES}`,
      { status: "failed", limit: "agent_reply" },
    );
  }
}

/** Where a user finds the reply shapes (generated from the schemas below and the tools'). */
const SHAPES = " (the reply shape of every role: docs/scripted.md)";

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
  /**
   * The brief's parts, named for the error when the request does not fit the model's budget; or
   * those with how to build the brief again for a lower budget and who records a retry for length.
   */
  brief: readonly BriefPart[] | BriefOptions = [],
): Promise<StructuredResult<z.infer<S>>> {
  const jsonSchema = { name: schemaName, schema: jsonSchemaOf(schema) };
  const options: BriefOptions = Array.isArray(brief)
    ? { parts: brief as readonly BriefPart[] }
    : (brief as BriefOptions);
  const responses: ModelResponse[] = [];
  let base: Brief = { messages: request.messages, parts: options.parts };
  /** The structured retry's turns, after the brief. */
  let turns: Message[] = [];
  // Checked before each send (the retry adds a turn); the budget goes on the tape for a replay.
  let budget = budgetFor(model, request.kind, request.rank);
  let lengthRetried = false;
  const send = async (): Promise<ModelResponse> => {
    const sized = { ...request, ...(budget !== undefined ? { contextBudget: budget } : {}), jsonSchema };
    const messages = [...base.messages, ...turns];
    assertFits({ ...sized, messages }, budget, base.parts);
    try {
      return await model.complete({ ...sized, messages });
    } catch (error) {
      // A provider's tokenizer may count more than the estimate: once per call, the brief is built
      // again under 80 % of the refused request's estimate and sent once more (a second refusal ends
      // the run as before). A function of the request alone, so a replay meets the same refusal and
      // shortens the same way.
      if (!(error instanceof ContextTooLong) || lengthRetried) throw error;
      lengthRetried = true;
      const before = loweredBudget({ ...sized, messages });
      budget = Math.min(budget ?? before.budget, before.budget);
      base =
        options.rebuild?.(budget) ??
        shortenedBrief({ ...sized, messages: base.messages }, budget, base.parts);
      const retry = { ...request, contextBudget: budget, jsonSchema, messages: [...base.messages, ...turns] };
      assertFits(
        retry,
        budget,
        base.parts,
        `80 % of the request of about ${before.estimate} tokens the provider refused as too long`,
      );
      options.onRetried?.({ budget, tokensBefore: before.estimate, tokensAfter: estimateOf(retry) });
      return await model.complete(retry);
    }
  };
  let firstError = "";
  for (let attempt = 0; attempt < 2; attempt++) {
    let reply: { response?: ModelResponse; raw: string; value?: unknown; error?: string; origin?: string };
    try {
      const response = await send();
      responses.push(response);
      onResponse?.(response);
      const raw = replyText(response);
      reply = { response, raw, value: response.json ?? parseJsonText(raw), origin: response.origin };
    } catch (error) {
      // The retry of a reply that did not fit got no scripted answer (no reply left): the reply
      // that did not fit is the cause to report, not only the retry's.
      if (attempt > 0 && error instanceof Error && error.name === "ScriptError")
        throw new UnfitScriptedReply(request.role, firstError, error);
      if (!(error instanceof Error) || error.name !== "StructuredOutputError") throw error;
      const failed = error as Error & { raw?: string; response?: ModelResponse };
      if (failed.response) {
        responses.push(failed.response);
        onResponse?.(failed.response);
      }
      reply = { raw: failed.raw ?? "", error: error.message, origin: failed.response?.origin };
    }
    if (reply.error === undefined) {
      const parsed = schema.safeParse(reply.value);
      if (parsed.success) return { value: parsed.data, responses };
      reply.error =
        parsed.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ") +
        unknownKeys(schema, reply.value);
    }
    const named = `${reply.origin ? `reply ${reply.origin}: ` : ""}${reply.error}`;
    if (attempt > 0) throw MalformedReply.twice(request.role, firstError, named);
    firstError = named;
    turns = retryMessages(reply.raw, reply.error, budget);
  }
  throw new Error("unreachable: a structured call returns or throws within two attempts");
}

/** unknownKeysNote for a zod object schema; "" for any other schema. */
function unknownKeys(schema: z.ZodType, value: unknown): string {
  const shape = (schema as { shape?: Record<string, unknown> }).shape;
  return shape ? unknownKeysNote(Object.keys(shape), value) : "";
}

function retryMessages(raw: string, error: string, budget: number | undefined): Message[] {
  // The rejected reply goes back as the model's turn, within its share of the budget.
  const quoted = quoteShare(raw, budget, "the audit tape");
  return [
    { role: "assistant", content: [{ type: "text", text: quoted.text || "(empty reply)" }] },
    {
      role: "user",
      content: [
        {
          type: "text",
          text: `${quoted.note ? `${quoted.note}\n` : ""}Your reply was rejected: ${quoteShare(error, budget, "the audit tape").text}\nAnswer again with one JSON object matching the schema, and nothing else.`,
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
