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
import { closest } from "../sam/suggest.ts";
import type { SamDocument } from "../sam/types.ts";
import { limitConflicts } from "./trial-limits.ts";
import { variantProblems } from "./variant-compare.ts";

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
