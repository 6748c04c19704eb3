// The one escape function of the report: every string that comes from a tape, a run file or the
// SAM goes through it before it reaches the page, in text and in attribute values alike.
import { visibleBlock } from "../terminal-text.ts";

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Non-printing code points (bidi overrides, zero-width, ESC, CR) shown as escapes, as in a terminal. */
export function escapeHtml(value: unknown): string {
  return visibleBlock(String(value)).replace(/[&<>"']/g, (c) => ENTITIES[c] ?? c);
}

/** Template tag: interpolated values are escaped; `raw()` marks already-built HTML. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += piece(values[i]) + (strings[i + 1] ?? "");
  return new Html(out);
}

/** HTML built by this module (safe by construction); anything else is escaped. */
export class Html {
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  toString(): string {
    return this.value;
  }
}

/** Trusted markup from the renderer itself (never tape content). */
export function raw(markup: string): Html {
  return new Html(markup);
}

function piece(value: unknown): string {
  if (value instanceof Html) return value.value;
  if (Array.isArray(value)) return value.map(piece).join("");
  if (value === undefined || value === null || value === false) return "";
  return escapeHtml(value);
}
