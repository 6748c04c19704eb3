// Structured output: the reply text must parse as JSON and match the request's JSON Schema.
import { z } from "zod";
import { type ContentBlock, StructuredOutputError } from "../types.ts";
import { MAX_REPLY_DEPTH, nestsDeeperThan } from "./shared.ts";

export function parseStructured(content: ContentBlock[], schema: Record<string, unknown>): unknown {
  const raw = content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("")
    .trim();
  let value: unknown;
  try {
    value = JSON.parse(stripFence(raw));
  } catch (error) {
    throw new StructuredOutputError(`structured output is not valid JSON: ${(error as Error).message}`, raw);
  }
  if (nestsDeeperThan(value, MAX_REPLY_DEPTH))
    throw new StructuredOutputError(
      `structured output nests more than ${MAX_REPLY_DEPTH} levels deep; the schema takes a few`,
      raw,
    );
  const result = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(value);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    const properties = schema.properties;
    const known = properties && typeof properties === "object" ? Object.keys(properties) : undefined;
    throw new StructuredOutputError(
      `structured output does not match the schema: ${issues}${known ? unknownKeysNote(known, value) : ""}`,
      raw,
    );
  }
  return value;
}

/**
 * The top-level keys of a rejected object reply that the schema does not take, so a misspelt key
 * (`skill` for `skills`) is named next to the missing one; "" when there are none.
 */
export function unknownKeysNote(known: readonly string[], value: unknown): string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "";
  const extra = Object.keys(value).filter((k) => !known.includes(k));
  if (extra.length === 0) return "";
  const names = extra.slice(0, 8).map((k) => JSON.stringify(k.slice(0, 40)));
  const more = extra.length > 8 ? ` and ${extra.length - 8} more` : "";
  return `; keys this reply does not take: ${names.join(", ")}${more} (it takes ${known.join(", ")})`;
}

/** Some OpenAI-compatible servers wrap JSON in a Markdown fence despite response_format. */
function stripFence(text: string): string {
  const match = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text);
  return match?.[1] ?? text;
}
