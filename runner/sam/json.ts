// Canonical JSON for a parsed SAM: keys sorted at every level, two-space indent, trailing newline.
// The same file always gives byte-identical output (`validate --json`, the run's sam.json).
import type { SamDocument } from "./types.ts";

export function samToJson(sam: SamDocument): string {
  return `${canonicalJson(sam)}\n`;
}

export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value), null, 2);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) {
    const inner = (value as Record<string, unknown>)[key];
    if (inner !== undefined) out[key] = sortKeys(inner);
  }
  return out;
}
