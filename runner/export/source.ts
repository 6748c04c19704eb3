// What an export reads: run folders (by id or path), eval folders (evals/<id>/trials/*/result.json,
// the fixed contract runner/eval/trial-result.ts), the facts the filters select on, and what the
// guard needs (the task folder, the hidden assets from the runner's pristine copies).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { type TrialResult, trialResultSchema } from "../eval/trial-result.ts";
import type { HistoryRecord } from "../memory/history-events.ts";
import { homePaths, runDir, runFiles } from "../paths.ts";
import type { Check, SamDocument, SamNode } from "../sam/types.ts";
import type { HiddenAsset, PathRewrite } from "./guard.ts";

export class ExportInputError extends Error {
  override name = "ExportInputError";
}

/** One run as an export sees it. */
export interface ExportRun {
  dir: string;
  runId: string;
  tape: string;
  /** The SAM's name (front matter `name`) or its folder's name. */
  task: string;
  /** `passed`, `failed`, `blocked`, or `unfinished` when the run has no outcome. */
  verdict: string;
  reason: string;
  /** The model spec the run was started with (`scripted:...`, a models.yaml name). */
  modelSpec: string;
  scripted: boolean;
  startedAt: string;
  sam: SamDocument | undefined;
  history: HistoryRecord[];
  /** The host task folder and the path the agent saw it at. */
  taskDir: string | undefined;
  workdir: string;
  /** Export it without a run_end record closing its tape (`--allow-unfinished`; tape-stream.ts). */
  allowUnfinished?: boolean;
  /** The eval trial this run came from, when it was selected through an eval. */
  trial?: TrialResult;
}

/** Runs named on the command line: run ids, run folders, or eval ids / eval folders. */
export function resolveInputs(inputs: string[], home: string): ExportRun[] {
  const runs: ExportRun[] = [];
  for (const input of inputs) {
    const evalDir = evalFolder(input, home);
    if (evalDir) runs.push(...readEval(evalDir).map((trial) => ({ ...openRun(trial.runDir), trial })));
    else runs.push(openRun(runFolder(input, home)));
  }
  return runs;
}

function evalFolder(input: string, home: string): string | undefined {
  for (const dir of [input, join(homePaths(home).evals, input)])
    if (existsSync(join(dir, "trials")) && statSync(join(dir, "trials")).isDirectory()) return resolve(dir);
  return undefined;
}

function runFolder(input: string, home: string): string {
  for (const dir of [input, runDir(home, input)]) if (existsSync(runFiles(dir).audit)) return resolve(dir);
  throw new ExportInputError(
    `no run or eval '${input}': looked for ${runFiles(input).audit}, ${runFiles(runDir(home, input)).audit} and ${join(homePaths(home).evals, input, "trials")}; pass a run id or folder under ${homePaths(home).runs}, or an eval id under ${homePaths(home).evals}`,
  );
}

/** Every trial result of an eval folder, checked against the contract, in trial-id order. */
export function readEval(dir: string): TrialResult[] {
  const trials = join(dir, "trials");
  return readdirSync(trials)
    .sort()
    .flatMap((name) => {
      const file = join(trials, name, "result.json");
      if (!existsSync(file)) return []; // a trial still running has no result yet
      const parsed = trialResultSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
      if (!parsed.success)
        throw new ExportInputError(
          `${file} is not a trial result (runner/eval/trial-result.ts): ${parsed.error.message}`,
        );
      return [parsed.data];
    });
}

export function openRun(dir: string): ExportRun {
  const files = runFiles(dir);
  if (!existsSync(files.audit)) throw new ExportInputError(`no audit tape in ${dir} (${files.audit})`);
  const state = readJson<{
    runId?: string;
    model?: string;
    outcome?: { status: string; reason: string };
  }>(files.state);
  const sam = readJson<SamDocument>(files.samJson);
  const spec = readJson<{ taskDir?: string; workdir?: string }>(files.spec);
  const history = existsSync(files.history)
    ? readFileSync(files.history, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as HistoryRecord)
    : [];
  const start = history.find((e) => e.type === "run_start");
  const modelSpec = state?.model ?? "";
  return {
    dir,
    runId: state?.runId ?? basename(dir),
    tape: files.audit,
    task: sam?.metadata?.name ?? (sam ? basename(dirname(sam.file)) : basename(dir)),
    verdict: state?.outcome?.status ?? "unfinished",
    reason: state?.outcome?.reason ?? "the run has no outcome",
    modelSpec,
    scripted: modelSpec.startsWith("scripted"),
    startedAt: start?.time ?? "",
    sam,
    history,
    taskDir: spec?.taskDir,
    workdir: spec?.workdir ?? "/task",
  };
}

/**
 * Why an eval trial's result cannot be vouched for as the run it names, or undefined: its runId
 * must be the run's (state.json, which the tape's records must match too: tape-stream.ts). Where
 * the folder lies is not checked: an eval folder named by path may point into another home, and
 * what is exported is the run's own verified tape.
 */
export function trialMismatch(run: ExportRun): string | undefined {
  const trial = run.trial;
  if (!trial || trial.runId === run.runId) return undefined;
  return `eval trial ${trial.trialId}: its result.json names run ${trial.runId}, but its runDir ${trial.runDir} holds run ${run.runId} (state.json): the trial's facts (status ${trial.status}) are not that run's`;
}

/** Host folders the export rewrites: the task folder to the agent's path, the rest to placeholders. */
export function hostPaths(run: ExportRun, home: string): PathRewrite[] {
  const paths: PathRewrite[] = [];
  if (run.taskDir) paths.push({ from: run.taskDir, to: run.workdir });
  paths.push({ from: run.dir, to: "<run>" }, { from: resolve(home), to: "<scifi-home>" });
  if (run.trial) paths.push({ from: dirname(dirname(dirname(run.dir))), to: "<eval-home>" });
  paths.push({ from: homedir(), to: "<home>" });
  // A sandbox's mount table (/proc/self/mountinfo) names the engine's storage on the host.
  for (const from of ENGINE_STORAGE) paths.push({ from, to: "<engine-storage>" });
  return paths;
}

/** The container engines' default storage and session folders on the host (Docker, containerd, Apptainer). */
export const ENGINE_STORAGE = [
  "/var/lib/docker",
  "/var/lib/containerd",
  "/run/containerd",
  "/run/docker",
  "/var/lib/apptainer",
  "/usr/local/var/apptainer",
  "/var/lib/singularity",
  "/usr/local/var/singularity",
];

/** The hidden check assets of a run, from the runner's pristine copies (state.json lists them). */
export function hiddenAssets(run: ExportRun): HiddenAsset[] {
  const state = readJson<{ pristine?: { files?: { rel: string; hidden?: boolean }[] } }>(
    runFiles(run.dir).state,
  );
  const files = state?.pristine?.files ?? [];
  return files
    .filter((f) => f.hidden)
    .map((f) => {
      const copy = join(runFiles(run.dir).pristine, f.rel);
      if (!existsSync(copy))
        throw new ExportInputError(
          `hidden asset ${f.rel} of run ${run.runId} has no pristine copy (${copy}): without it the export cannot prove the asset is left out, so it is refused`,
        );
      return { rel: f.rel, content: readFileSync(copy, "utf8") };
    });
}

/** Every check of the SAM by id (to tell compare stages, whose output never leaves). */
export function checksById(sam: SamDocument | undefined): Map<string, Check> {
  const out = new Map<string, Check>();
  const visit = (node: SamNode) => {
    for (const item of node.items) for (const check of item.checks) out.set(check.id, check);
    for (const child of node.children) visit(child);
  };
  if (sam?.root) visit(sam.root);
  return out;
}

function readJson<T>(file: string): T | undefined {
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, "utf8")) as T;
}
