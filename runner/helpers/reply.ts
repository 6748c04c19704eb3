// Reading model replies: the text, and a whole-document fence around it taken off.
import type { ModelResponse } from "../llm/types.ts";

export function replyText(response: ModelResponse): string {
  return response.content
    .filter((b) => b.type === "text")
    .map((b) => b.text)
    .join("");
}

/**
 * A reply that is entirely one fenced block (```markdown ... ``` or ````md ... ````) is unwrapped;
 * anything else is returned trimmed. Inner fences (check blocks) are kept.
 */
export function unwrapDocument(text: string): string {
  const trimmed = text.trim();
  const open = /^(`{3,}|~{3,})[ \t]*(markdown|md|yaml|text)?[ \t]*\n/i.exec(trimmed);
  if (!open) return `${trimmed}\n`;
  const fence = open[1] ?? "```";
  if (!trimmed.endsWith(fence)) return `${trimmed}\n`;
  const inner = trimmed.slice(open[0].length, trimmed.length - fence.length);
  return `${inner.replace(/\s+$/, "")}\n`;
}

/** The first JSON object in a reply: the whole text, a ```json block, or the outermost braces. */
export function extractJson(text: string): unknown {
  const candidates = [text.trim()];
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n```/.exec(text);
  if (fenced?.[1]) candidates.push(fenced[1]);
  const start = text.indexOf("{");
  const end = text.lastIndexOf("}");
  if (start >= 0 && end > start) candidates.push(text.slice(start, end + 1));
  for (const candidate of candidates) {
    try {
      return JSON.parse(candidate);
    } catch {
      // try the next candidate
    }
  }
  throw new SyntaxError("the reply contains no JSON object");
}
