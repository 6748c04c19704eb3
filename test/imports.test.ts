// The import graph of runner/ keeps the directions of /work/shared/design.md: every folder has a
// layer (LAYERS, lowest first) and imports only its own folder and lower layers, no module imports
// itself through a circle, and the wiring's own rules hold (nothing below the CLI imports
// runner/cli, runner/jobs never imports the run: its job tools reach a run as an extension,
// runner/extension/run-extension.ts; the run-id and exit-code modules are leaves). Reads every
// `import`/`export ... from` and `import("...")` of runner/**/*.ts, types too.
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

/**
 * The layers of runner/, lowest first, each a list of folders (`(root)`: the files directly in
 * runner/). A module may import its own folder and the folders of lower layers; folders of one
 * layer are siblings that import neither each other nor anything above. Why each sits where it does:
 * - the root utilities (atomic-write, exit-codes, frozen, paths, pid-lock, run-id, sha256) import no folder;
 * - sam owns the vocabularies it validates (approval actions, host rules, program kinds);
 * - audit, skills, policy and memory never reach a model, a sandbox, the network or the run;
 * - run-folder is the schema of `runs/<id>/` (state, layout) that the run writes and the report reads;
 * - llm knows nothing of sandboxes and sandbox nothing of models: siblings;
 * - extension is what a component adds to a run (jobs builds one), above the tools it carries;
 * - report reads the run folder, never the loop; the loop (the run) composes everything below it;
 * - import turns tasks of other formats (Harbor) into SAM folders: it reads SAM rules and writes files, nothing more;
 * - above the run: the LLM helpers, the daemon (it starts runs) and the CLI, which nothing imports;
 * - eval runs suites of runs and reads the report's page frame for its own page (its result
 *   contract, trial-result.ts, is what evolve reads);
 * - evolve reads run records, eval results and configs, and asks a model only through a helper session.
 * - export reads verified tapes and run and eval folders, never starts or changes a run.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["(root)"],
  ["sam"],
  ["audit"],
  ["skills"],
  ["policy"],
  ["memory"],
  ["run-folder"],
  ["approval"],
  ["network"],
  ["llm", "sandbox"],
  ["tools"],
  ["extension"],
  ["jobs"],
  // critique: the trace and finding formats and their host-side citation checks; agents, report and run read them.
  ["critique"],
  ["agents"],
  ["report"],
  ["import"],
  ["run"],
  ["helpers"],
  ["daemon"],
  // scifi check-task: audits a task's checks with scripted lazy agents, each a run; eval and the CLI read it.
  ["check-task"],
  // scifi eval: runs trials as runs (run), as SLURM jobs (jobs); read by the CLI only.
  ["eval"],
  ["evolve", "export"],
  ["cli"],
];

/** The folder of a runner module: its first folder under runner/, or `(root)`. */
function folderOf(module: string): string {
  const parts = module.split("/");
  return parts.length > 2 ? (parts[1] as string) : "(root)";
}

function layerOf(folder: string): number {
  return LAYERS.findIndex((layer) => layer.includes(folder));
}

/** Every arrow that goes up a layer or across to a sibling, named with the two folders and layers. */
function arrowsAgainstLayers(graph: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [module, targets] of graph) {
    const from = folderOf(module);
    for (const target of targets) {
      const to = folderOf(target);
      if (to === from) continue;
      const [a, b] = [layerOf(from), layerOf(to)];
      if (b < a) continue;
      const why = b === a ? "a sibling in the same layer" : "a higher layer";
      out.push(`${module} -> ${target}: ${from} (layer ${a}) imports ${to} (layer ${b}), ${why}`);
    }
  }
  return out;
}

/** The circles of the module graph (strongly connected components of more than one module, or a self-import). */
function circles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (module: string): void => {
    index.set(module, next);
    low.set(module, next);
    next++;
    stack.push(module);
    onStack.add(module);
    for (const target of graph.get(module) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(module, Math.min(low.get(module) as number, low.get(target) as number));
      } else if (onStack.has(target)) {
        low.set(module, Math.min(low.get(module) as number, index.get(target) as number));
      }
    }
    if (low.get(module) !== index.get(module)) return;
    const component: string[] = [];
    for (;;) {
      const member = stack.pop() as string;
      onStack.delete(member);
      component.push(member);
      if (member === module) break;
    }
    if (component.length > 1 || (graph.get(module) ?? []).includes(module)) found.push(component.sort());
  };
  for (const module of graph.keys()) if (!index.has(module)) visit(module);
  return found;
}

const under = (folder: string) => (module: string) => module.startsWith(`runner/${folder}/`);

describe("the import graph of runner/", () => {
  const graph = importGraph();

  it("reads the imports it checks (static, type-only and dynamic)", () => {
    expect(graph.size).toBeGreaterThan(50);
    const setup = graph.get("runner/run/setup.ts") ?? [];
    expect(setup).toContain("runner/run/start.ts");
    expect(setup).toContain("runner/jobs/run-jobs.ts"); // a dynamic import
    expect(graph.get("runner/jobs/run-jobs.ts")).toContain("runner/extension/run-extension.ts"); // type-only
  });

  it("every folder of runner/ has a layer", () => {
    const folders = new Set([...graph.keys()].map(folderOf));
    const placed = LAYERS.flat();
    const missing = [...folders].filter((folder) => !placed.includes(folder));
    expect(missing, "a new runner/ folder: add it to LAYERS where its imports put it").toEqual([]);
    expect(new Set(placed).size, "a folder is named twice in LAYERS").toBe(placed.length);
  });

  it("each module imports only its own folder and lower layers (no arrow up, none across siblings)", () => {
    expect(arrowsAgainstLayers(graph)).toEqual([]);
  });

  it("the layer check sees an arrow up and one across siblings", () => {
    const probe = new Map([
      ["runner/sam/parse.ts", ["runner/network/proxy.ts", "runner/sam/types.ts", "runner/paths.ts"]],
      ["runner/sandbox/docker.ts", ["runner/llm/types.ts"]],
    ]);
    expect(arrowsAgainstLayers(probe)).toEqual([
      "runner/sam/parse.ts -> runner/network/proxy.ts: sam (layer 1) imports network (layer 8), a higher layer",
      "runner/sandbox/docker.ts -> runner/llm/types.ts: sandbox (layer 9) imports llm (layer 9), a sibling in the same layer",
    ]);
  });

  it("no module imports itself through a circle", () => {
    expect(circles(graph).map((circle) => circle.join(" <-> "))).toEqual([]);
  });

  it("the circle check finds a circle between two modules and a self-import", () => {
    const probe = new Map([
      ["runner/memory/a.ts", ["runner/memory/b.ts"]],
      ["runner/memory/b.ts", ["runner/memory/a.ts", "runner/paths.ts"]],
      ["runner/paths.ts", []],
      ["runner/frozen.ts", ["runner/frozen.ts"]],
    ]);
    expect(circles(probe)).toEqual([["runner/memory/a.ts", "runner/memory/b.ts"], ["runner/frozen.ts"]]);
  });

  it("nothing below the CLI imports runner/cli", () => {
    expect(edges(graph, (m) => !under("cli")(m), under("cli"))).toEqual([]);
  });

  it("runner/jobs does not import runner/run (job tools plug into a run as an extension)", () => {
    expect(edges(graph, under("jobs"), under("run"))).toEqual([]);
  });

  it("the run-id, exit-code and sha256 modules are leaves; the extension module imports no run, CLI or jobs module", () => {
    const leaves = ["runner/run-id.ts", "runner/exit-codes.ts", "runner/sha256.ts"];
    for (const leaf of leaves) expect(graph.get(leaf), leaf).toEqual([]);
    const extension = graph.get("runner/extension/run-extension.ts") ?? [];
    expect(extension.filter((m) => under("run")(m) || under("cli")(m) || under("jobs")(m))).toEqual([]);
  });
});
