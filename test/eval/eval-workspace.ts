// What the eval end-to-end tests share: the fixtures (a suite, scripted models), the CLI, short
// model retries, and a fresh workspace holding a copy of the fixtures and an empty home.
import { cpSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import { REPO } from "../run/harness.ts";

export const FIXTURES = join(import.meta.dirname, "fixtures");
export const CLI = join(REPO, "bin", "scifi.js");
export const RETRY = { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 };

export function evalWorkspace(label: string): { root: string; home: string } {
  const root = mkdtempSync(join(tmpdir(), `scifi-eval-${label}-`));
  cpSync(FIXTURES, root, { recursive: true });
  const home = join(root, "home");
  mkdirSync(home);
  return { root, home };
}

/** A summary without what differs between two computations of the same trials (ids, times, wall clock). */
export function comparable(summary: EvalSummary): unknown {
  const { evalId: _id, computedAt: _at, ...rest } = summary;
  return {
    ...rest,
    groups: rest.groups.map(({ wallMs: _wall, ...g }) => g),
    byModelVariant: rest.byModelVariant.map(({ wallMs: _wall, ...m }) => m),
    variantTable: {
      ...rest.variantTable,
      rows: rest.variantTable.rows.map((r) => ({
        ...r,
        cells: r.cells.map((c) => (c === null ? c : (({ wallMs: _wall, ...k }) => k)(c))),
      })),
    },
  };
}
