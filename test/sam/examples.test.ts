// Every example under tasks/examples validates, has checks on its Expectation, and ships the check
// assets it declares. (Running the checks needs verilator/gfortran/python in the sandbox image;
// the end-to-end suites do that.)
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { formatDiagnostic } from "../../runner/sam/diagnostics.ts";
import { findSamFiles } from "../../runner/sam/discover.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import type { SamNode } from "../../runner/sam/types.ts";

const examplesDir = join(import.meta.dirname, "..", "..", "tasks", "examples");
/** The examples this suite is about; other helpers add more SAMs under tasks/examples (all must validate). */
const REQUIRED = [
  "gfortran-build-run",
  "pandas-csv-aggregation",
  "root-gaussian-fit",
  "two-level-subsams",
  "verilator-counter-debug",
];
const found = findSamFiles(examplesDir);
// A referenced sub-SAM file is validated as part of its parent, as `scifi validate` does: on its own
// it has no check assets (only the top-level SAM lists them), so its compare stages name none.
const included = new Set(
  found.flatMap((f) => {
    const parsed = parseSamSync(f);
    return parsed.ok ? parsed.sam.files.slice(1).map((s) => s.file) : [];
  }),
);
const allSams = found.filter((f) => !included.has(resolve(f))).map((f) => relative(examplesDir, f));

const allNodes = (n: SamNode): SamNode[] => [n, ...n.children.flatMap(allNodes)];

describe("tasks/examples", () => {
  it("has the five required examples", () => {
    const folders = readdirSync(examplesDir).filter((name) => existsSync(join(examplesDir, name, "task.md")));
    expect(folders).toEqual(expect.arrayContaining(REQUIRED));
  });

  it.each(allSams)("%s validates", (path) => {
    expect(parseSamSync(join(examplesDir, path)).diagnostics.map(formatDiagnostic)).toEqual([]);
  });

  it.each(REQUIRED)("%s has checks on every SAM and ships its check assets", (name) => {
    const file = join(examplesDir, name, "task.md");
    const result = parseSamSync(file);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual([]);
    if (!result.ok) return;
    const { sam } = result;
    expect(sam.metadata.name).toBe(name);
    for (const node of allNodes(sam.root)) {
      expect(node.items.flatMap((i) => i.checks).length, `checks in ${node.title}`).toBeGreaterThan(0);
    }
    expect(sam.metadata.checkAssets.length).toBeGreaterThan(0);
    for (const asset of sam.metadata.checkAssets)
      expect(existsSync(resolve(dirname(file), asset))).toBe(true);
  });

  it("two-level-subsams has a nested and a referenced sub-SAM", () => {
    const result = parseSamSync(join(examplesDir, "two-level-subsams", "task.md"));
    if (!result.ok) throw new Error("invalid");
    expect(result.sam.root.children.map((c) => [c.title, c.source.file.endsWith("analyse.md")])).toEqual([
      ["simulate the walks", false],
      ["Analyse the final positions", true],
    ]);
  });
});
