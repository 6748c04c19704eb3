// The one run id format, minted in one place per run (runner/run/setup.ts; the daemon before it
// spawns a worker, since it must know the id before the process starts): `<UTC yyyymmdd-hhmmss>-<name>-<6 hex>`,
// sortable by start time, readable, unique enough for one home. A leaf: imports nothing of scifi.
import { randomBytes } from "node:crypto";

export function newRunId(name: string, now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "").replace("T", "-");
  return `${stamp}-${nameSlug(name)}-${randomBytes(3).toString("hex")}`;
}

/** A task name as a run-id part: lower-case letters, digits and single dashes, at most 40 characters. */
export function nameSlug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-|-$/g, "")
      .slice(0, 40) || "task"
  );
}

/**
 * A name a command may take as a run id or task key: letters, digits, `_`, `.`, `-`, and not `.`
 * or `..` (those name the folder itself or its parent, never a run).
 */
export function isRunName(given: string): boolean {
  return /^[\w.-]+$/.test(given) && given !== "." && given !== "..";
}
