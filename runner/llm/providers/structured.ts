// Structured output: the reply text must parse as JSON and match the request's JSON Schema.
import { z } from "zod";
import { type ContentBlock, StructuredOutputError } from "../types.ts";

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
  const result = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]).safeParse(value);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`).join("; ");
    throw new StructuredOutputError(`structured output does not match the schema: ${issues}`, raw);
  }
  return value;
}

/** Some OpenAI-compatible servers wrap JSON in a Markdown fence despite response_format. */
function stripFence(text: string): string {
  const match = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(text);
  return match?.[1] ?? text;
}
