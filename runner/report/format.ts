// How the report writes numbers and long text: tokens, money, shares, times and sizes with the same
// precision as `scifi audit stats`, and long text folded behind a <details>.
import type { TapeUsage } from "../audit/types.ts";
import { type Html, html } from "./escape.ts";

/** Text longer than this is folded: the head is shown, the rest opens on demand. */
const FOLD_CHARS = 1_500;

/** Long text: the head in a <pre>, the rest behind a <details> (search still finds it). */
export function fold(text: string): Html {
  if (text.length <= FOLD_CHARS) return html`<pre>${text}</pre>`;
  const cut =
    text.lastIndexOf("\n", FOLD_CHARS) > FOLD_CHARS / 2 ? text.lastIndexOf("\n", FOLD_CHARS) : FOLD_CHARS;
  return html`<pre>${text.slice(0, cut)}</pre><details class="fold"><summary>${(text.length - cut).toLocaleString("en")} more characters</summary><pre>${text.slice(cut)}</pre></details>`;
}

export function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 120)}…` : line;
}

export function cacheShare(u: TapeUsage): number {
  const inputSide = u.input + u.cacheWrite + u.cacheRead;
  return inputSide === 0 ? 0 : u.cacheRead / inputSide;
}

export function tokens(u: TapeUsage): string {
  return `input ${u.input}, cache write ${u.cacheWrite}, cache read ${u.cacheRead}, output ${u.output}${u.reasoning ? ` (reasoning ${u.reasoning})` : ""}`;
}

export function tokenCount(u: TapeUsage): number {
  return u.input + u.cacheWrite + u.cacheRead + u.output;
}

export function tokenShort(n: number): string {
  return n >= 1e6 ? `${(n / 1e6).toFixed(1)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0);
}

/** Same precision as `scifi audit stats`, so the two can be compared by eye and by test. */
export const usd = (n: number): string => `$${n.toFixed(4)}`;
export const percent = (share: number): string => `${(share * 100).toFixed(1)} %`;
export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
export const gib = (bytes: number): string => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
