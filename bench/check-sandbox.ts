// Shared by bench/loop-check-sandbox.bench.ts (Docker, in this process) and
// test/sandbox/apptainer/bench-check-sandbox.ts (Apptainer, inside the harness): the cost per
// iteration of running the checks in a fresh sandbox instead of the already-running work sandbox.
// Both sides run the same real checks (a shipped example's, through runChecks, in a copy of its task
// folder), so the difference is what the fresh sandbox adds: its start and its stop.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveSpec } from "../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY } from "../runner/policy/site.ts";
import type { SandboxSpec } from "../runner/policy/spec.ts";
import { copyForChecks, removeCopy } from "../runner/run/checks/check-copy.ts";
import { isCompare, runChecks, subtreeChecks } from "../runner/run/checks/checks.ts";
import { buildCompareFolder, StageOutputs } from "../runner/run/checks/stages.ts";
import { phaseSpec } from "../runner/run/session/sandboxes.ts";
import type { PristineSet } from "../runner/run-folder/state.ts";
import { parseSamSync } from "../runner/sam/parse.ts";
import type { Sandbox, SandboxBackend } from "../runner/sandbox/types.ts";
import { scaled } from "./size.ts";

/** The shipped example whose run stages are run (a clean gfortran build, a run). */
export const EXAMPLE = "gfortran-build-run";
const STUBBORN_ROUNDS = scaled(3, 1);

export interface CheckSandboxOptions {
  backend: SandboxBackend;
  /** Image the sandboxes run; needs gfortran and make (scifi-sci:local). */
  image: string;
  rounds: number;
  /** Where the copy of the task folder and the runner home go (default: the OS temp folder). */
  root: string;
  /** Spec fields to replace (the harness runs as uid 1000; the default is the invoking user). */
  specOverrides?: Partial<SandboxSpec>;
}

export interface CheckSandboxResult {
  rounds: number;
  example: string;
  /** Per round: the checks in the already-running work sandbox (ms). */
  inWorkMs: number[];
  /** Per round: start + checks + stop of a fresh sandbox (ms). */
  freshMs: number[];
  /** Per round: the parts of freshMs. */
  startMs: number[];
  checksMs: number[];
  stopMs: number[];
  /** Per round: freshMs - inWorkMs (ms), paired within the round. */
  addedMs: number[];
  /** stop() of a sandbox in which a detached process ignores SIGTERM/SIGHUP (ms, a few rounds). */
  stubbornStopMs: number[];
  /**
   * Per round: a hidden comparison as before stages (a fresh sandbox on a copy of the task folder,
   * `diff` against the expected output) and the same comparison as a compare stage (the output
   * copied out, the runner-built folder, a fresh compare sandbox); `compareAddedMs` is their paired
   * difference (ms).
   */
  hiddenMs: number[];
  compareMs: number[];
  compareAddedMs: number[];
}

/**
 * N rounds, each timing both sides once, alternating which goes first so that a slow spell of the
 * machine hits both alike. Throws when the checks do not pass on either side (a broken measurement).
 */
export async function measureCheckSandbox(options: CheckSandboxOptions): Promise<CheckSandboxResult> {
  const dir = mkdtempSync(join(options.root, "scifi-bench-checksb-"));
  try {
    const { spec, node } = prepareTask(dir, options);
    const work = await options.backend.start(spec);
    try {
      // The agent's fix and deliverable, made in the work sandbox as the work pass would: then the
      // checks pass and do their real work (a clean build and a run), not a quick failure.
      const fix = await work.exec(
        "printf '\\nmain.o: stats_mod.o\\n' >> Makefile && make -s && mkdir -p results && ./stats data/values.txt > results/stats.txt",
        { timeoutMs: 300_000 },
      );
      if (fix.exitCode !== 0) throw new Error(`bench set-up failed in the work sandbox: ${fix.stderr}`);
      // The run stages (the build and the run): compare stages run in a folder of their own
      // (measured by the compare case below), not in a task folder's sandbox.
      const runStages = subtreeChecks(node).filter((c) => !isCompare(c.check));
      const check = (sandbox: Sandbox) => runChecks({ sandbox, node, checks: runStages });
      const mustPass = (outcomes: Awaited<ReturnType<typeof check>>, side: string) => {
        const failed = outcomes.filter((o) => !o.passed);
        if (failed.length > 0 || outcomes.length === 0)
          throw new Error(`bench checks failed (${side}): ${failed.map((o) => o.output).join("\n")}`);
      };
      mustPass(await check(work), "warm-up"); // warms the page cache and the engine for both sides
      const result: CheckSandboxResult = {
        rounds: options.rounds,
        example: EXAMPLE,
        inWorkMs: [],
        freshMs: [],
        startMs: [],
        checksMs: [],
        stopMs: [],
        addedMs: [],
        stubbornStopMs: [],
        hiddenMs: [],
        compareMs: [],
        compareAddedMs: [],
      };
      const inWork = async () => {
        const t0 = performance.now();
        mustPass(await check(work), "work sandbox");
        return performance.now() - t0;
      };
      const fresh = async (round: number) => {
        const t0 = performance.now();
        // Its own name, as the loop gives each iteration's check sandbox; the same grant otherwise.
        const sandbox = await options.backend.start({ ...spec, runId: `${spec.runId}-check-${round}` });
        const t1 = performance.now();
        let outcomes: Awaited<ReturnType<typeof check>>;
        try {
          outcomes = await check(sandbox);
        } finally {
          const t2 = performance.now();
          await sandbox.stop();
          const t3 = performance.now();
          result.startMs.push(t1 - t0);
          result.checksMs.push(t2 - t1);
          result.stopMs.push(t3 - t2);
        }
        mustPass(outcomes, "fresh sandbox");
        return performance.now() - t0;
      };
      for (let round = 0; round < options.rounds; round++) {
        let a: number;
        let b: number;
        if (round % 2 === 0) {
          a = await inWork();
          b = await fresh(round);
        } else {
          b = await fresh(round);
          a = await inWork();
        }
        result.inWorkMs.push(a);
        result.freshMs.push(b);
        result.addedMs.push(b - a);
      }
      await measureCompareStage(options, spec, dir, result);
      // A stop that waited for a grace period would cost it here: a process ignores TERM and HUP.
      for (let round = 0; round < STUBBORN_ROUNDS; round++) {
        const sandbox = await options.backend.start({ ...spec, runId: `${spec.runId}-stubborn-${round}` });
        try {
          await sandbox.exec(
            `setsid sh -c 'trap "" TERM HUP INT; while :; do sleep 0.2; done' </dev/null >/dev/null 2>&1 &`,
          );
        } finally {
          const t0 = performance.now();
          await sandbox.stop();
          result.stubbornStopMs.push(performance.now() - t0);
        }
      }
      return result;
    } finally {
      await work.stop();
    }
  } finally {
    removeCopy(dir);
  }
}

/** The expected output as a hidden asset, compared the old way and as a compare stage, paired per round. */
async function measureCompareStage(
  options: CheckSandboxOptions,
  spec: SandboxSpec,
  dir: string,
  result: CheckSandboxResult,
): Promise<void> {
  const expected = "checks/expected_output.txt";
  const pristineDir = join(dir, "pristine");
  mkdirSync(join(pristineDir, "checks"), { recursive: true });
  cpSync(join(spec.taskDir, expected), join(pristineDir, expected));
  const pristine: PristineSet = {
    files: [{ rel: expected, kind: "asset", hidden: true, sha256: "", mode: 0o644 }],
    folders: [],
  };
  const passes = (exitCode: number, side: string) => {
    if (exitCode !== 0) throw new Error(`bench comparison failed (${side})`);
  };
  const hidden = async (round: number) => {
    const t0 = performance.now();
    const copy = join(dir, "checks-copy");
    copyForChecks(spec.taskDir, copy, { maxBytes: 1024 ** 3 });
    const sandbox = await options.backend.start({
      ...phaseSpec({ ...spec, taskDir: copy, mounts: onTask(spec, copy) }, "checks", pristine),
      runId: `${spec.runId}-hidden-${round}`,
    });
    try {
      passes(
        (await sandbox.exec(["bash", "-o", "pipefail", "-c", `diff -u ${expected} results/stats.txt`]))
          .exitCode,
        "hidden",
      );
    } finally {
      await sandbox.stop();
      rmSync(copy, { recursive: true, force: true });
    }
    return performance.now() - t0;
  };
  const compare = async (round: number) => {
    const t0 = performance.now();
    const outputs = new StageOutputs(join(dir, "outputs"));
    if (outputs.collect(spec.taskDir, ["results/stats.txt"]).length > 0)
      throw new Error("bench outputs not copied");
    const folder = join(dir, "compare");
    buildCompareFolder(folder, pristineDir, pristine, outputs.dir);
    const sandbox = await options.backend.start({
      ...phaseSpec({ ...spec, taskDir: folder, mounts: onTask(spec, folder) }, "compare", pristine),
      runId: `${spec.runId}-compare-${round}`,
    });
    try {
      passes(
        (
          await sandbox.exec([
            "bash",
            "-o",
            "pipefail",
            "-c",
            `diff -u ${expected} outputs/results/stats.txt`,
          ])
        ).exitCode,
        "compare",
      );
    } finally {
      await sandbox.stop();
      removeCopy(folder); // its outputs/ is 0555: a runner that is not root empties it first
    }
    return performance.now() - t0;
  };
  for (let round = 0; round < options.rounds; round++) {
    const first = round % 2 === 0;
    const a = first ? await hidden(round) : 0;
    const b = await compare(round);
    const c = first ? a : await hidden(round);
    result.hiddenMs.push(c);
    result.compareMs.push(b);
    result.compareAddedMs.push(b - c);
  }
}

/** The spec's mounts with the task folder's moved to `folder` (as the run does for its copies). */
function onTask(spec: SandboxSpec, folder: string): SandboxSpec["mounts"] {
  return spec.mounts.map((m) => (m.source === spec.taskDir ? { ...m, source: folder } : m));
}

/** Copies the example into `dir/task` and resolves its spec and check node as a run does. */
function prepareTask(dir: string, options: CheckSandboxOptions) {
  const taskDir = join(dir, "task");
  const home = join(dir, "home");
  mkdirSync(home);
  cpSync(join(import.meta.dirname, "..", "tasks", "examples", EXAMPLE), taskDir, { recursive: true });
  // Only the image is changed in the copy's SAM (the example names none: the site default).
  const samFile = join(taskDir, "task.md");
  const text = readFileSync(samFile, "utf8");
  writeFileSync(samFile, text.replace(/^---\n/, `---\nimage: ${options.image}\n`));
  const parsed = parseSamSync(samFile);
  if (!parsed.ok) throw new Error(`bench SAM invalid: ${JSON.stringify(parsed.diagnostics)}`);
  const spec: SandboxSpec = {
    ...resolveSpec(parsed.sam, BUILTIN_SITE_POLICY, { home, runId: `bench-checksb-${process.pid}` }),
    ...options.specOverrides,
  };
  return { spec, node: parsed.sam.root };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** Nearest-rank quantile (p90 of 10 values is the 9th smallest). */
export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] as number;
}
