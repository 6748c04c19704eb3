// A tool call's input as a person reads it: short fields as JSON, and every multi-line text (a
// write_file's content, an edit's old and new text, a long command) as the text itself, not as an
// escaped JSON string with \n in it.
import { type Html, html } from "./escape.ts";
import { fold } from "./format.ts";

export function toolInput(input: Record<string, unknown>): Html {
  const texts = Object.entries(input).filter(
    (entry): entry is [string, string] => typeof entry[1] === "string" && entry[1].includes("\n"),
  );
  if (texts.length === 0) return fold(JSON.stringify(input, null, 2));
  const names = new Set(texts.map(([k]) => k));
  const rest = Object.fromEntries(Object.entries(input).filter(([k]) => !names.has(k)));
  return html`${Object.keys(rest).length ? fold(JSON.stringify(rest, null, 2)) : ""}${texts.map(
    ([name, text]) => html`<div class="muted tool-field">${name}:</div>${fold(text)}`,
  )}`;
}
