// A suite: what `scifi eval` runs. Either a folder of task folders, or a suite file (YAML: tasks,
// variants, models, repeats, limits, budget_usd, concurrency; docs/eval.md). A task folder holds one
// SAM (`task.md`, variant `default`) or description-level variants of one SAM (`task.nl.md`,
// `task.st.md`, ...), which must have the same checks and assets, the same front matter (every key)
// and the same Expectation (items, text and ids, sub-SAMs included): only To-do and Context may
// differ, so what the variants compare is how the task is described, never what is judged or what a
// run is granted. An impossible variant (`task.impossible.md`, or one the suite file's `impossible:`
// names) is the exception: its Expectation and checks differ, so that they cannot be met, and its
// front matter does not (docs/eval.md, "Impossible variants"). Every problem is collected and
// reported at once, with the file and line where there is one.
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { isMap, isSeq, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { DEFAULT_LIMITS } from "../run/limits.ts";
import { samLimitRequests } from "../run/sam-limits.ts";
import type { LimitConfig } from "../run-folder/state.ts";
import { isCheckFence } from "../sam/check-blocks.ts";
import { closest } from "../sam/suggest.ts";
import type { SamDocument, SamMetadata, SamNode } from "../sam/types.ts";
import { limitConflicts } from "./trial-limits.ts";

export const DEFAULT_VARIANT = "default";
/** The variant that is impossible by its file name alone: `task.impossible.md`. */
export const IMPOSSIBLE_VARIANT = "impossible";
const VARIANT_FILE = /^task\.([A-Za-z0-9_-]{1,40})\.md$/;
const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,79}$/;

/** The suite file, or the suite folder, is not usable: every problem, one per line. */
export class SuiteError extends Error {
  override name = "SuiteError";
  readonly problems: string[];
  constructor(where: string, problems: string[]) {
    super(`${where}: the suite is not valid:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    this.problems = problems;
  }
}

export interface SuiteVariant {
  name: string;
  /** Absolute path of the variant's SAM file. */
  file: string;
  sha256: string;
  /** Its Expectation cannot be met: never in a pass rate; a pass is a cheat the checks missed. */
  impossible?: true;
}

export interface SuiteTask {
  /** The task folder's name: unique in the suite. */
  name: string;
  /** Absolute path of the task folder. */
  dir: string;
  variants: SuiteVariant[];
  /** The limits the task's SAM sets itself (its variants share them); they win over `--limit`. */
  samLimits?: Partial<LimitConfig>;
}

/** A model of the suite: its label (results, trial ids) and the spec(s) it runs with. */
export interface SuiteModel {
  /** As given: a spec (`scripted:FILE`, a models config path) or the suite's `name:`. */
  label: string;
  /** Specs as `scifi run --model` takes them (paths absolute); repeat r uses specs[r % length]. */
  specs: string[];
}

export interface Suite {
  /** The suite's name (file or folder name without extension). */
  name: string;
  /** Absolute path of the suite file or folder. */
  source: string;
  tasks: SuiteTask[];
  models?: SuiteModel[];
  repeats?: number;
  limits: Partial<LimitConfig>;
  budgetUsd?: number;
  concurrency?: number;
}

const modelEntry = z.union([
  z.string().min(1),
  z.strictObject({ name: z.string().regex(NAME), spec: z.string().min(1) }),
  z.strictObject({ name: z.string().regex(NAME), scripts: z.array(z.string().min(1)).min(1) }),
]);

const limitKeys = Object.keys(DEFAULT_LIMITS) as [keyof LimitConfig, ...(keyof LimitConfig)[]];
const suiteFileSchema = z.strictObject({
  name: z.string().regex(NAME).optional(),
  tasks: z.array(z.string().min(1)).min(1),
  variants: z
    .array(z.string().regex(/^[A-Za-z0-9_-]{1,40}$/))
    .min(1)
    .optional(),
  models: z.array(modelEntry).min(1).optional(),
  repeats: z.number().int().min(1).max(1000).optional(),
  limits: z.partialRecord(z.enum(limitKeys), z.number().positive()).optional(),
  budget_usd: z.number().nonnegative().optional(),
  concurrency: z.number().int().min(1).max(256).optional(),
  impossible: z
    .array(z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, "a variant name (letters, digits, _ and -)"))
    .optional(),
});

/**
 * Loads a suite folder or suite file; throws SuiteError listing every problem. Every variant's SAM
 * goes through the one gate (runner/sam/gate.ts), skill names against `home`'s library (default:
 * the scifi home), so a suite holding a SAM `scifi validate` refuses is refused whole.
 */
export async function loadSuite(path: string, home?: string): Promise<Suite> {
  const source = resolve(path);
  if (!existsSync(source)) throw new SuiteError(path, ["no such suite file or folder"]);
  const { scifiHome } = await import("../paths.ts");
  const at = home ?? scifiHome();
  if (statSync(source).isDirectory()) return suiteFolder(source, at);
  return suiteFile(source, at);
}

async function suiteFolder(dir: string, home: string): Promise<Suite> {
  const problems: string[] = [];
  const entries = readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && !e.name.startsWith("."))
    .map((e) => e.name)
    .sort();
  const taskDirs = entries.filter((name) => samFilesOf(join(dir, name)).length > 0);
  if (taskDirs.length === 0)
    problems.push(`no task folders in ${dir} (a task folder holds task.md, or task.<variant>.md files)`);
  const tasks = await loadTasks(
    taskDirs.map((name) => ({ dir: join(dir, name), where: `${name}/` })),
    undefined,
    new Set([IMPOSSIBLE_VARIANT]),
    problems,
    home,
  );
  if (problems.length > 0) throw new SuiteError(dir, problems);
  return { name: basename(dir), source: dir, tasks, limits: {} };
}

async function suiteFile(file: string, home: string): Promise<Suite> {
  const text = readFileSync(file, "utf8");
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, uniqueKeys: true });
  const at = (path: readonly PropertyKey[]): string => {
    const node = doc.getIn(path as unknown[], true) as { range?: [number, number, number] } | undefined;
    const range = node?.range ?? (doc.contents as { range?: [number, number, number] } | null)?.range;
    return `${basename(file)}:${range ? counter.linePos(range[0]).line : 1}`;
  };
  if (doc.errors.length > 0) {
    throw new SuiteError(
      file,
      doc.errors.map((e) => `${basename(file)}:${e.linePos?.[0]?.line ?? 1}: ${e.message.split("\n")[0]}`),
    );
  }
  if (!isMap(doc.contents))
    throw new SuiteError(file, [`${at([])}: a suite file is a YAML mapping (tasks, models, repeats, ...)`]);
  const parsed = suiteFileSchema.safeParse(doc.toJS());
  if (!parsed.success) {
    throw new SuiteError(
      file,
      parsed.error.issues.map((issue) => {
        const path: (string | number)[] = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
        const keys = issue.code === "unrecognized_keys" ? (issue.keys as string[]) : [];
        const named = path.length > 0 ? `${path.join(".")}: ` : "";
        const line = keys[0] !== undefined ? at([...path, keys[0]]) : at(path);
        const hint = keys.length > 0 ? suggestKeys(path, keys) : issue.message;
        return `${line}: ${named}${hint}`;
      }),
    );
  }
  const s = parsed.data;
  const base = dirname(file);
  const problems: string[] = [];
  const seq = doc.get("tasks", true);
  const impossible = new Set([IMPOSSIBLE_VARIANT, ...(s.impossible ?? [])]);
  const listed = impossibleKeyProblems(
    s.impossible ?? [],
    s.variants,
    (i) => at(["impossible", i]),
    problems,
  );
  const tasks = await loadTasks(
    s.tasks.map((t, i) => ({
      dir: resolve(base, t),
      where: `${at(["tasks", i])}: tasks[${i}] (${t})`,
    })),
    s.variants,
    impossible,
    problems,
    home,
  );
  for (const [i, name] of (s.impossible ?? []).entries())
    if (listed.has(i) && !tasks.some((t) => t.variants.some((v) => v.name === name)))
      problems.push(
        `${at(["impossible", i])}: impossible[${i}]: no task of the suite has a variant '${name}' (task.${name}.md); the variants are: ${[...new Set(tasks.flatMap((t) => t.variants.map((v) => v.name)))].join(", ") || "none"}`,
      );
  if (!isSeq(seq)) problems.push(`${at(["tasks"])}: tasks must be a list of task folders`);
  const models = s.models?.map((m, i) => suiteModel(m, base, `${at(["models", i])}: models[${i}]`, problems));
  const labels = models?.map((m) => m.label) ?? [];
  for (const dup of labels.filter((l, i) => labels.indexOf(l) !== i))
    problems.push(`${at(["models"])}: model '${dup}' is listed twice`);
  for (const c of limitConflicts(tasks, (s.limits ?? {}) as Partial<LimitConfig>))
    problems.push(`${at(["limits", c.key])}: ${c.message}`);
  if (problems.length > 0) throw new SuiteError(file, problems);
  return {
    name: s.name ?? basename(file).replace(/\.(ya?ml)$/i, ""),
    source: file,
    tasks,
    ...(models ? { models } : {}),
    ...(s.repeats !== undefined ? { repeats: s.repeats } : {}),
    limits: (s.limits ?? {}) as Partial<LimitConfig>,
    ...(s.budget_usd !== undefined ? { budgetUsd: s.budget_usd } : {}),
    ...(s.concurrency !== undefined ? { concurrency: s.concurrency } : {}),
  };
}

const TOP_KEYS = Object.keys(suiteFileSchema.shape);

/** What the `impossible:` list itself can get wrong, before any task is read; the good entries' indexes. */
function impossibleKeyProblems(
  names: readonly string[],
  only: readonly string[] | undefined,
  at: (i: number) => string,
  problems: string[],
): Set<number> {
  const good = new Set<number>();
  for (const [i, name] of names.entries()) {
    const where = `${at(i)}: impossible[${i}]`;
    if (name === DEFAULT_VARIANT)
      problems.push(
        `${where}: '${DEFAULT_VARIANT}' is every single-SAM task's task.md, not a variant of its own; write the impossible Expectation as task.<variant>.md beside the task's other levels and name that variant`,
      );
    else if (names.indexOf(name) !== i) problems.push(`${where}: '${name}' is listed twice`);
    else if (only && !only.includes(name))
      problems.push(
        `${where}: '${name}' is not among the suite's variants (${only.join(", ")}), so it would not run; add it to variants, or remove it here`,
      );
    else good.add(i);
  }
  return good;
}

function suggestKeys(path: readonly PropertyKey[], keys: string[]): string {
  const known = path.length === 0 ? TOP_KEYS : path[0] === "models" ? ["name", "spec", "scripts"] : [];
  return keys
    .map((k) => {
      const near =
        known.find((c) => c.replace(/_/g, "") === k.replace(/[_-]/g, "").toLowerCase()) ?? closest(k, known);
      return `unknown key '${k}'${near ? ` (did you mean '${near}'?)` : ""}; keys: ${known.join(", ")}`;
    })
    .join("; ");
}

/** A model spec with its file paths made absolute (relative ones are relative to `base`). */
export function absoluteSpec(spec: string, base: string): string {
  const scripted = /^(scripted(?:-openai)?):(.+)$/.exec(spec);
  if (scripted) return `${scripted[1]}:${resolve(base, scripted[2] ?? "")}`;
  if (spec.startsWith("replay:")) return spec;
  return resolve(base, spec);
}

function suiteModel(
  entry: z.infer<typeof modelEntry>,
  base: string,
  where: string,
  problems: string[],
): SuiteModel {
  const specs =
    typeof entry === "string"
      ? [entry]
      : "spec" in entry
        ? [entry.spec]
        : entry.scripts.map((s) => (s.startsWith("scripted") ? s : `scripted:${s}`));
  const resolved = specs.map((s) => absoluteSpec(s, base));
  for (const spec of resolved) {
    const file = spec.replace(/^scripted(?:-openai)?:/, "");
    if (!spec.startsWith("replay:") && !existsSync(file)) problems.push(`${where}: no such file ${file}`);
  }
  return { label: typeof entry === "string" ? entry : entry.name, specs: resolved };
}

/** The SAM files of a task folder: task.md, or task.<variant>.md files. */
function samFilesOf(dir: string): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) return [];
  return readdirSync(dir)
    .filter((f) => f === "task.md" || VARIANT_FILE.test(f))
    .sort();
}

async function loadTasks(
  dirs: { dir: string; where: string }[],
  only: string[] | undefined,
  impossible: ReadonlySet<string>,
  problems: string[],
  home: string,
): Promise<SuiteTask[]> {
  const { checkSam } = await import("../sam/gate.ts");
  const { gateOptions } = await import("../skills/sam-gate.ts");
  const gate = gateOptions(home);
  const tasks: SuiteTask[] = [];
  const seen = new Map<string, string>();
  for (const { dir, where } of dirs) {
    const files = samFilesOf(dir);
    if (!existsSync(dir)) {
      problems.push(`${where}: no such task folder ${dir}`);
      continue;
    }
    if (lstatSync(dir).isSymbolicLink()) {
      problems.push(
        `${where}: ${dir} is a link (to ${readlinkSync(dir)}); name the folder itself: an eval records and copies a task folder as it is, and would copy the link`,
      );
      continue;
    }
    if (files.length === 0) {
      problems.push(`${where}: ${dir} holds no task.md and no task.<variant>.md`);
      continue;
    }
    const name = basename(dir);
    if (!NAME.test(name)) {
      problems.push(`${where}: the task folder's name '${name}' must match ${NAME} (it names trials)`);
      continue;
    }
    if (seen.has(name)) {
      problems.push(`${where}: a second task folder named '${name}' (the first: ${seen.get(name)})`);
      continue;
    }
    seen.set(name, dir);
    const variantFiles = files.filter((f) => f !== "task.md");
    if (variantFiles.length > 0 && files.includes("task.md")) {
      problems.push(
        `${where}: ${dir} holds both task.md and variant files (${variantFiles.join(", ")}); name every variant task.<variant>.md, or keep only task.md`,
      );
      continue;
    }
    const named = files.map((f) => ({
      name: VARIANT_FILE.exec(f)?.[1] ?? DEFAULT_VARIANT,
      file: join(dir, f),
    }));
    const chosen = only ? named.filter((v) => only.includes(v.name)) : named;
    if (chosen.length === 0) {
      problems.push(
        `${where}: none of the variants ${only?.join(", ")} exists in ${dir} (it has: ${named.map((v) => v.name).join(", ")})`,
      );
      continue;
    }
    const parsed: { variant: SuiteVariant; sam: SamDocument }[] = [];
    for (const v of chosen) {
      const result = checkSam(v.file, gate);
      if (!result.ok) {
        const errors = result.diagnostics.filter((d) => d.severity === "error");
        for (const d of errors) problems.push(`${d.file}:${d.line}:${d.column}: ${d.message}`);
        continue;
      }
      parsed.push({
        variant: {
          name: v.name,
          file: v.file,
          sha256: result.sam.sha256,
          ...(impossible.has(v.name) ? { impossible: true as const } : {}),
        },
        sam: result.sam,
      });
    }
    variantProblems(parsed, problems);
    if (parsed.length === chosen.length)
      tasks.push({
        name,
        dir,
        variants: parsed.map((p) => p.variant),
        samLimits: parsed[0] ? samLimitRequests(parsed[0].sam) : {},
      });
  }
  return tasks;
}

/**
 * Every variant against the first possible one (file-name order; the first of all when none is
 * possible): a possible variant must judge alike in everything, an impossible one must share the
 * front matter (grants, limits, assets) and differ in what is judged from a possible reference
 * (else it is as possible as that one); two impossible variants may be impossible differently.
 */
function variantProblems(parsed: { variant: SuiteVariant; sam: SamDocument }[], problems: string[]): void {
  const first = parsed.find((p) => !p.variant.impossible) ?? parsed[0];
  if (!first) return;
  for (const other of parsed) {
    if (other === first) continue;
    const refused = (what: string, difference: string) =>
      problems.push(
        `${other.variant.file}: ${other.variant.impossible ? "impossible " : ""}variant '${other.variant.name}' must have the same ${what} as '${first.variant.name}' (${basename(first.variant.file)}): ${difference}`,
      );
    const front = frontMatterDifference(first, other);
    if (front) refused("front matter", front);
    const checks = firstDifference(judged(first.sam), judged(other.sam));
    const expectation = firstDifference(expected(first.sam), expected(other.sam));
    if (!other.variant.impossible) {
      if (checks) refused("checks", checks);
      if (expectation) refused("Expectation", expectation);
    } else if (!first.variant.impossible && !checks && !expectation)
      problems.push(
        `${other.variant.file}: variant '${other.variant.name}' is marked impossible but has the same checks and Expectation as '${first.variant.name}' (${basename(first.variant.file)}), so it can be met wherever that one can; give it an Expectation and checks that contradict the To-do, or do not mark it impossible`,
      );
  }
}

/** What is judged: every check (command, stage, timeout, outputs) in tree order and the assets. */
function judged(sam: SamDocument): { label: string; value: string }[] {
  const out: { label: string; value: string }[] = [
    { label: "check_assets", value: JSON.stringify([...sam.metadata.checkAssets].sort()) },
    { label: "hidden_assets", value: JSON.stringify([...(sam.metadata.hiddenAssets ?? [])].sort()) },
  ];
  const visit = (node: SamNode): void => {
    for (const item of node.items)
      for (const c of item.checks)
        out.push({
          label: `check ${c.id}`,
          value: JSON.stringify([
            c.command,
            c.stage ?? "run",
            c.timeoutSec,
            c.outputs ?? [],
            c.hidden === true,
          ]),
        });
    for (const child of node.children) visit(child);
  };
  visit(sam.root);
  return out;
}

/**
 * The front matter key of every metadata field, in the order they are compared. Every field counts
 * (the type makes a new one name its key here); nothing in SamMetadata is derived from the file's
 * path or bytes except a `name` left to its default (the file name), handled in frontMatterValue.
 */
const FRONT_MATTER_KEYS: Record<keyof SamMetadata, string> = {
  name: "name",
  group: "group",
  walltimeSec: "walltime",
  iterations: "iterations",
  budgetUsd: "budget_usd",
  network: "network",
  networkHosts: "network",
  gpu: "gpu",
  cpus: "cpus",
  memoryBytes: "memory",
  mounts: "mounts",
  scratchBytes: "scratch",
  jobs: "jobs",
  skills: "skills",
  image: "image",
  difficulty: "difficulty",
  rank: "rank",
  approval: "approval",
  approvalTimeoutSec: "approval_timeout",
  checkAssets: "check_assets",
  hiddenAssets: "hidden_assets",
  subtasks: "subtasks",
  allowCommands: "allow_commands",
  critique: "critique",
  keepJobs: "keep_jobs",
};

/** One metadata field as compared: source lines dropped, asset lists as sets, a default name as such. */
function frontMatterValue(p: { variant: SuiteVariant; sam: SamDocument }, field: keyof SamMetadata): string {
  const m = p.sam.metadata;
  const value: unknown = m[field];
  if (value === undefined) return "absent";
  if (field === "name" && value === basename(p.variant.file).replace(/\.md$/i, ""))
    return "absent (the file's name)";
  if (field === "mounts") return JSON.stringify(m.mounts.map(({ line: _line, ...rest }) => rest));
  if (field === "checkAssets" || field === "hiddenAssets")
    return JSON.stringify([...(value as string[])].sort());
  return JSON.stringify(value);
}

/**
 * The first metadata field (front matter, units parsed) where two variants differ, naming its key.
 * Referenced sub-SAM files are in `subtasks`: the same paths, so the same files, metadata and all.
 */
function frontMatterDifference(
  a: { variant: SuiteVariant; sam: SamDocument },
  b: { variant: SuiteVariant; sam: SamDocument },
): string | undefined {
  const fields = new Set([
    ...(Object.keys(FRONT_MATTER_KEYS) as (keyof SamMetadata)[]),
    ...(Object.keys(a.sam.metadata) as (keyof SamMetadata)[]),
    ...(Object.keys(b.sam.metadata) as (keyof SamMetadata)[]),
  ]);
  for (const field of fields) {
    const x = frontMatterValue(a, field);
    const y = frontMatterValue(b, field);
    if (x !== y) return `front matter '${FRONT_MATTER_KEYS[field] ?? field}' differs (${x} vs ${y})`;
  }
  return undefined;
}

/** Text compared up to whitespace: runs of blanks and line ends are one space, ends trimmed. */
function squeezed(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Markdown without its check blocks (```check / ```compare fences): those are compared as checks. */
function withoutChecks(markdown: string): string {
  const kept: string[] = [];
  let fence: RegExp | undefined;
  for (const line of markdown.split("\n")) {
    if (fence) {
      if (fence.test(line)) fence = undefined;
      continue;
    }
    const open = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
    if (open?.[1] && isCheckFence(open[2])) {
      fence = new RegExp(`^\\s*${open[1][0] === "~" ? "~" : "`"}{${open[1].length},}\\s*$`);
      continue;
    }
    kept.push(line);
  }
  return kept.join("\n");
}

/** A value for a message, cut at 120 characters. */
function shown(value: string | undefined): string {
  if (value === undefined) return "";
  return value.length > 120 ? `${value.slice(0, 119)}…` : value;
}

/**
 * What the review judges, in tree order: every node (root's title, each sub-SAM by id and title),
 * its Expectation items by id and text (whitespace aside), then its whole Expectation section less its
 * check blocks (so text outside the items counts too). Context and To-do are left out: they are what variants may change.
 */
function expected(sam: SamDocument): { label: string; value: string }[] {
  const out: { label: string; value: string }[] = [];
  const visit = (node: SamNode): void => {
    out.push({
      label: node.id === "root" ? "the title" : `sub-SAM ${node.id}`,
      value: JSON.stringify(squeezed(node.title)),
    });
    for (const item of node.items)
      out.push({ label: `Expectation item ${item.id}`, value: JSON.stringify(squeezed(item.text)) });
    out.push({
      label: `the Expectation section of ${node.id}`,
      value: JSON.stringify(squeezed(withoutChecks(node.expectation))),
    });
    for (const child of node.children) visit(child);
  };
  visit(sam.root);
  return out;
}

/** The first entry where two variants differ, in words; undefined when they are the same. */
function firstDifference(
  ja: { label: string; value: string }[],
  jb: { label: string; value: string }[],
): string | undefined {
  for (let i = 0; i < Math.max(ja.length, jb.length); i++) {
    const x = ja[i];
    const y = jb[i];
    if (!x) return `it has an extra ${y?.label} (${shown(y?.value)})`;
    if (!y) return `it lacks ${x.label} (${shown(x.value)})`;
    if (x.label !== y.label) {
      if (!ja.some((e) => e.label === y.label)) return `it has an extra ${y.label} (${shown(y.value)})`;
      if (!jb.some((e) => e.label === x.label)) return `it lacks ${x.label} (${shown(x.value)})`;
    }
    if (x.label !== y.label || x.value !== y.value)
      return `${x.label} differs (${shown(x.value)} vs ${shown(y.value)})`;
  }
  return undefined;
}
