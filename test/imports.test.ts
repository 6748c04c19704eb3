// The import graph of runner/ keeps the directions of /work/shared/design.md that the wiring relies
// on: nothing below the CLI imports runner/cli, runner/jobs never imports the loop (its job tools
// reach a run as an extension, runner/extension/run-extension.ts), and the run-id and exit-code modules are
// leaves. Reads every `import`/`export ... from` and `import("...")` of runner/**/*.ts, types too.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "..");
const RUNNER = join(ROOT, "runner");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

const SPECIFIER =
  /\b(?:import|export)\s[^;]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)/g;

/** Each runner module (path relative to the repository) with the runner modules it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(RUNNER)) {
    const text = readFileSync(file, "utf8");
    const targets: string[] = [];
    for (const match of text.matchAll(SPECIFIER)) {
      const specifier = match[1] ?? match[2] ?? "";
      if (specifier.startsWith(".")) targets.push(relative(ROOT, resolve(dirname(file), specifier)));
    }
    graph.set(relative(ROOT, file), targets);
  }
  return graph;
}

function edges(graph: Map<string, string[]>, from: (m: string) => boolean, to: (m: string) => boolean) {
  return [...graph].flatMap(([module, targets]) =>
    from(module) ? targets.filter(to).map((target) => `${module} -> ${target}`) : [],
  );
}

const under = (folder: string) => (module: string) => module.startsWith(`runner/${folder}/`);

describe("the import graph of runner/", () => {
  const graph = importGraph();

  it("reads the imports it checks (static, type-only and dynamic)", () => {
    expect(graph.size).toBeGreaterThan(50);
    const setup = graph.get("runner/loop/setup.ts") ?? [];
    expect(setup).toContain("runner/loop/run.ts");
    expect(setup).toContain("runner/jobs/run-jobs.ts"); // a dynamic import
    expect(graph.get("runner/jobs/run-jobs.ts")).toContain("runner/extension/run-extension.ts"); // type-only
  });

  it("nothing below the CLI imports runner/cli", () => {
    expect(edges(graph, (m) => !under("cli")(m), under("cli"))).toEqual([]);
  });

  it("runner/jobs does not import runner/loop (job tools plug into a run as an extension)", () => {
    expect(edges(graph, under("jobs"), under("loop"))).toEqual([]);
  });

  it("the run-id, exit-code and extension modules import no loop, CLI or jobs module", () => {
    const leaves = ["runner/run-id.ts", "runner/exit-codes.ts"];
    for (const leaf of leaves) expect(graph.get(leaf), leaf).toEqual([]);
    const extension = graph.get("runner/extension/run-extension.ts") ?? [];
    expect(extension.filter((m) => under("loop")(m) || under("cli")(m) || under("jobs")(m))).toEqual([]);
  });
});
