// The built-in lazy agents of `scifi check-task` (docs/check-task.md): scripted models, labelled
// scripted, whose script is written for the task at hand (its node ids, its file names), so that
// they run through the whole loop of a real run: the same sandboxes, the same check stages, the
// same pristine copies. Their review is credulous (every item passes): only the runner's checks
// stand between a lazy agent and a PASS, which is what the audit asks about.
import { existsSync, lstatSync, readdirSync, readFileSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { stringify } from "yaml";
import type { SamDocument, SamNode } from "../sam/types.ts";

/** The lazy agents, in the order they run. `claim` on the untouched folder is also audit (a). */
export const LAZY_AGENTS = ["nothing", "claim", "empty", "constants"] as const;
export type LazyAgent = (typeof LAZY_AGENTS)[number];

/** What each lazy agent does, as the audit's findings name it. */
export const AGENT_WORDS: Record<LazyAgent | "solution", string> = {
  nothing: "an agent that does nothing (its pass ends at the step limit, without a claim)",
  claim: "an agent that only claims the work is done (report_done) on the untouched folder",
  empty: "an agent that empties every file it may (every file but the SAMs and check assets)",
  constants: "an agent that writes plausible constants into every file the Expectation names",
  solution:
    "the task's solution, its files written over the task folder by the work agent (its solve.sh run, if it has one), then report_done",
};

/** Tool calls in one scripted step (below the default per-step limit). */
const CALLS_PER_STEP = 8;
/** Files the empty and constants agents touch at most (a huge folder is not worth more). */
const MAX_FILES = 200;

type Reply = Record<string, unknown>;

/** The files a lazy agent may not touch: the SAM files and the check assets (they are restored anyway). */
export function protectedFiles(sam: SamDocument, taskDir: string): Set<string> {
  // task.md too: an audit of a variant (task.nl.md) runs the copy's task.md.
  const kept = new Set<string>([...sam.metadata.checkAssets, "task.md"]);
  kept.add(relative(taskDir, sam.file));
  for (const node of nodes(sam.root)) kept.add(relative(taskDir, node.source.file));
  for (const sub of sam.metadata.subtasks) kept.add(sub);
  return kept;
}

/** Every node, children before their parent, in document order: the order a run completes them. */
export function nodes(node: SamNode): SamNode[] {
  return [...node.children.flatMap(nodes), node];
}

/** The task folder's regular files (no link followed; `.git` left alone), relative, sorted. */
export function taskFolderFiles(taskDir: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (found.length >= MAX_FILES) return;
      if (dir === taskDir && name === ".git") continue;
      const path = join(dir, name);
      const st = lstatSync(path);
      if (st.isDirectory()) walk(path);
      else if (st.isFile()) found.push(relative(taskDir, path));
    }
  };
  walk(taskDir);
  return found;
}

/**
 * The files the Expectation names: paths in its item texts and check commands (a word with a
 * `/`-free or relative path and an extension), and the run stages' declared outputs.
 */
export function expectationFiles(sam: SamDocument): string[] {
  const names = new Set<string>();
  const pathLike =
    /(?<![\w/.$-])(?:\.\/)?([A-Za-z0-9_][\w.-]*(?:\/[\w.-]+)*\.[A-Za-z][A-Za-z0-9]{0,5})(?![\w/])/g;
  for (const node of nodes(sam.root)) {
    for (const item of node.items) {
      for (const text of [item.text, ...item.checks.map((c) => c.command)]) {
        for (const m of text.replaceAll("/task/", " ").matchAll(pathLike)) {
          const name = m[1] ?? "";
          // Not a path the agent writes: a URL's host, a version number, a Python module call.
          if (/^\d+(\.\d+)+$/.test(name) || name.includes("..")) continue;
          names.add(name);
        }
      }
      for (const check of item.checks) for (const out of check.outputs ?? []) names.add(out);
    }
  }
  return [...names].sort().slice(0, MAX_FILES);
}

/** A plausible constant for a file of this kind: a number, in the file's own format. */
export function plausibleConstant(path: string): string {
  switch (extname(path).toLowerCase()) {
    case ".json":
      return '{"value": 42, "result": 42, "count": 42, "mean": 42.0}\n';
    case ".csv":
      return "name,value\nresult,42\n";
    case ".tsv":
      return "name\tvalue\nresult\t42\n";
    case ".py":
      return "print(42)\n";
    case ".sh":
      return "#!/bin/sh\necho 42\n";
    case ".yaml":
    case ".yml":
      return "value: 42\n";
    case ".md":
      return "# Result\n\n42\n";
    default:
      return "42\n";
  }
}

/** The script of one lazy agent (or of the solution, which only claims) for this task. */
export function lazyScript(
  agent: LazyAgent | "solution",
  sam: SamDocument,
  taskDir: string,
  solution?: string,
): { text: string; firstPassSteps: number; firstPassCalls: number } {
  const kept = protectedFiles(sam, taskDir);
  const order = nodes(sam.root);
  const work = workReplies(agent, sam, taskDir, kept, solution);
  const script = {
    prescan: order.map((node) => ({
      json: {
        node: node.id,
        rank: 1,
        skills: [],
        context: "",
        plan: `scripted check-task agent '${agent}'`,
        direction: `check-task audit: ${agent}`,
      },
    })),
    // The first node gets the agent's whole work; a later node (the parent once its children
    // passed) only the claim: what the folder holds by then is what the agent left.
    work: order.flatMap((_, i) => (i === 0 ? work : claimReplies())),
    review: order.map((node) => ({
      json: {
        items: node.items.map((item) => ({
          id: item.id,
          pass: true,
          evidence: "scripted check-task audit: a credulous review; only the runner's checks decide",
        })),
        findings: [],
        fixes: [],
        rank_adjustment: 0,
      },
    })),
    final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
  };
  return {
    text: `# Scripted model (labelled scripted): scifi check-task's lazy agent '${agent}', written for\n# ${sam.file}: ${AGENT_WORDS[agent]}.\n${stringify(script)}`,
    firstPassSteps: work.length,
    firstPassCalls: work.reduce((n, r) => n + ((r.tool_calls as unknown[] | undefined)?.length ?? 0), 0),
  };
}

function claimReplies(): Reply[] {
  return [
    {
      tool_calls: [
        {
          name: "report_done",
          input: {
            claim: "Every Expectation item holds.",
            summary: "scripted check-task agent: no change made",
          },
        },
      ],
    },
  ];
}

function workReplies(
  agent: LazyAgent | "solution",
  sam: SamDocument,
  taskDir: string,
  kept: ReadonlySet<string>,
  solution?: string,
): Reply[] {
  if (agent === "nothing") return [{ text: "Nothing to do." }];
  if (agent === "solution" && solution) return [...chunked(solutionCalls(solution)), ...claimReplies()];
  if (agent === "claim" || agent === "solution") return claimReplies();
  const writes =
    agent === "empty"
      ? taskFolderFiles(taskDir)
          .filter((f) => !kept.has(f))
          .map((path) => ({ path, content: "" }))
      : expectationFiles(sam)
          .filter((f) => !kept.has(f))
          .map((path) => ({ path, content: plausibleConstant(path) }));
  return [...chunked(writes.map((input) => ({ name: "write_file", input }))), ...claimReplies()];
}

type Call = { name: string; input: Record<string, unknown> };

function chunked(calls: readonly Call[]): Reply[] {
  const steps: Reply[] = [];
  for (let i = 0; i < calls.length; i += CALLS_PER_STEP)
    steps.push({ tool_calls: calls.slice(i, i + CALLS_PER_STEP) });
  return steps;
}

/** A solution's files above this size together are refused (the script carries them). */
export const SOLUTION_MAX_BYTES = 4 * 1024 ** 2;

/**
 * The work agent's calls that lay a solution folder over the task folder: written by the agent in
 * its own sandbox (laid over before the run, a solution holding a hidden reference's content would
 * be refused by the SAM gate, rightly), text with write_file, other bytes and exec bits through
 * bash; a `solve.sh` at its top (Harbor's solution/) is then run in /task.
 */
export function solutionCalls(solution: string): Call[] {
  const calls: Call[] = [];
  let bytes = 0;
  const utf8 = new TextDecoder("utf-8", { fatal: true });
  for (const rel of taskFolderFiles(solution)) {
    const path = join(solution, rel);
    const data = readFileSync(path);
    bytes += data.length;
    if (bytes > SOLUTION_MAX_BYTES)
      throw new Error(
        `the solution ${solution} holds more than ${SOLUTION_MAX_BYTES} bytes of files: give a smaller one`,
      );
    const executable = (lstatSync(path).mode & 0o111) !== 0;
    let text: string | undefined;
    try {
      text = utf8.decode(data);
    } catch {
      text = undefined;
    }
    if (text !== undefined && !executable) {
      calls.push({ name: "write_file", input: { path: rel, content: text } });
      continue;
    }
    const quoted = `'${rel.replaceAll("'", "'\\''")}'`;
    calls.push({
      name: "bash",
      input: {
        command: `mkdir -p -- "$(dirname -- ${quoted})" && printf %s '${data.toString("base64")}' | base64 -d > ${quoted}${executable ? ` && chmod +x -- ${quoted}` : ""}`,
      },
    });
  }
  if (existsSync(join(solution, "solve.sh")))
    calls.push({ name: "bash", input: { command: "bash solve.sh" } });
  return calls;
}
