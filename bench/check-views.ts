// Shared by bench/loop-check-views.bench.ts (Docker, in this process) and
// test/sandbox/apptainer/bench-check-views.ts (Apptainer, inside the harness): what checks that
// share nothing cost (issue 37). One three-check iteration of the iso-checks task (a make build, two
// numpy verifiers) run as before, all three in one sandbox on the task folder, against each check on
// a view of its own (check-view.ts: copy-on-write, or a copy where no overlay mounts), with its asset folders built from pristine copies
// (check-views.ts), in a sandbox of its own, the next one's made ready while a check runs, as the
// run does (runner/run/checks/ahead.ts); paired per round, alternating which side goes first.
// Also the view alone on a task folder of 100,000 small files.
import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resolveSpec } from "../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY } from "../runner/policy/site.ts";
import type { SandboxSpec } from "../runner/policy/spec.ts";
import { awaitedLater, runAhead } from "../runner/run/checks/ahead.ts";
import { removeCopy } from "../runner/run/checks/check-copy.ts";
import { dropCheckView, makeCheckView } from "../runner/run/checks/check-view.ts";
import { buildCheckAssets } from "../runner/run/checks/check-views.ts";
import { type PlannedCheck, runChecks, subtreeChecks } from "../runner/run/checks/checks.ts";
import { phaseSpec } from "../runner/run/session/sandboxes.ts";
import { capturePristine } from "../runner/run/task-folder/pristine.ts";
import type { PristineSet } from "../runner/run-folder/state.ts";
import { parseSamSync } from "../runner/sam/parse.ts";
import type { SamNode } from "../runner/sam/types.ts";
import type { SandboxBackend } from "../runner/sandbox/types.ts";

const TASK = join(import.meta.dirname, "..", "test", "fixtures", "adversarial", "iso-checks");
const VIEW_BYTES = 16 * 1024 ** 3;

export interface CheckViewsOptions {
  backend: SandboxBackend;
  /** Needs python3, numpy and make (scifi-sci:local). */
  image: string;
  rounds: number;
  root: string;
  /** Files of the large task folder whose view is timed (default 100,000). */
  manyFiles?: number;
}

export interface CheckViewsResult {
  rounds: number;
  /** Per round: the three checks in one sandbox on the task folder, start to stop (ms). */
  sharedMs: number[];
  /** Per round: each check on its own view and assets in its own sandbox, start to stop (ms). */
  isolatedMs: number[];
  /** Per round: isolatedMs - sharedMs (ms). */
  addedMs: number[];
  /** Per round: making (and removing) the view of the task folder of `manyFiles` files (ms). */
  manyViewMs: number[];
  manyFiles: number;
  /** How the views were made (check-view.ts), and why not the kinds before it. */
  viewKind: string;
  /** Per round: of isolatedMs, the time spent making and dropping the three checks' views (ms). */
  viewsMs: number[];
}

export async function measureCheckViews(options: CheckViewsOptions): Promise<CheckViewsResult> {
  const dir = mkdtempSync(join(options.root, "scifi-bench-views-"));
  try {
    const { spec, node, pristine, pristineDir } = prepare(dir, options.image);
    const checks = subtreeChecks(node);
    const result: CheckViewsResult = {
      rounds: options.rounds,
      sharedMs: [],
      isolatedMs: [],
      addedMs: [],
      manyViewMs: [],
      manyFiles: options.manyFiles ?? 100_000,
      viewKind: "",
      viewsMs: [],
    };
    let viewsMs = 0;
    const mustPass = (outcomes: { passed: boolean; output?: string }[], side: string) => {
      const failed = outcomes.filter((o) => !o.passed);
      if (failed.length > 0) throw new Error(`bench checks failed (${side}): ${failed[0]?.output}`);
    };
    const assets = join(dir, "check-assets");
    buildCheckAssets(assets, pristineDir, pristine);
    const shared = async (round: number) => {
      const t0 = performance.now();
      const sandbox = await options.backend.start({
        ...phaseSpec(spec, "checks", pristine, assets),
        runId: `${spec.runId}-shared-${round}`,
      });
      try {
        mustPass(await runChecks({ sandbox, node, checks }), "shared");
      } finally {
        await sandbox.stop();
      }
      return performance.now() - t0;
    };
    // Two of each, used in turn, as the run does (phases/checks.ts): the next check's view, asset
    // folders and sandbox are made ready while the check before runs (runner/run/checks/ahead.ts).
    const slots = [1, 2].map((n) => ({
      view: join(dir, `checks-copy-${n}`),
      assets: join(dir, `assets-${n}`),
    }));
    const root = process.getuid?.() === 0;
    let turn = 0;
    const ready = (planned: PlannedCheck, runId: string) => {
      const slot = slots[turn++ % slots.length] as (typeof slots)[number];
      // As the run does (task-folder.ts): a root runner gives the view to the sandbox's user.
      const t0 = performance.now();
      const made = makeCheckView(spec.taskDir, slot.view, {
        maxBytes: VIEW_BYTES,
        ...(root ? { owner: spec.user } : {}),
      });
      result.viewKind = [made.kind, ...made.notUsed.map((why) => `(not ${why})`)].join(" ");
      viewsMs += performance.now() - t0;
      buildCheckAssets(slot.assets, pristineDir, pristine);
      const started = options.backend.start({
        ...phaseSpec(
          { ...spec, taskDir: slot.view, mounts: onTask(spec, slot.view) },
          "checks",
          pristine,
          slot.assets,
        ),
        runId,
      });
      return { planned, slot, sandbox: awaitedLater(started) };
    };
    const dropView = (view: string) => {
      const t1 = performance.now();
      dropCheckView(view);
      viewsMs += performance.now() - t1;
    };
    const isolated = async (round: number) => {
      const t0 = performance.now();
      viewsMs = 0;
      const runIds = new Map(checks.map((c, i) => [c, `${spec.runId}-iso-${round}-${i}`]));
      await runAhead(checks, {
        ahead: () => true,
        prepare: (planned) => ready(planned, runIds.get(planned) as string),
        discard: async ({ slot, sandbox }) => {
          await (await sandbox.catch(() => undefined))?.stop();
          dropView(slot.view);
        },
        run: async (planned, { slot, sandbox: starting }) => {
          const sandbox = await starting;
          try {
            mustPass(await runChecks({ sandbox, node, checks: [planned] }), "isolated");
          } finally {
            await sandbox.stop();
            dropView(slot.view);
          }
        },
      });
      result.viewsMs.push(viewsMs);
      return performance.now() - t0;
    };
    await shared(-1); // warm-up: page cache, image, engine
    for (let round = 0; round < options.rounds; round++) {
      const first = round % 2 === 0;
      const a = first ? await shared(round) : 0;
      const b = await isolated(round);
      const c = first ? a : await shared(round);
      result.sharedMs.push(c);
      result.isolatedMs.push(b);
      result.addedMs.push(b - c);
    }
    const many = join(dir, "many");
    manyFilesFolder(many, result.manyFiles);
    const manyView = join(dir, "many-view");
    // Three rounds when the view is copy-on-write; one when it is a copy (minutes for 100,000 files).
    for (let round = 0; round < 3; round++) {
      const t0 = performance.now();
      const made = makeCheckView(many, manyView, { maxBytes: VIEW_BYTES });
      dropCheckView(manyView);
      result.manyViewMs.push(performance.now() - t0);
      if (made.kind === "copy") break;
    }
    return result;
  } finally {
    removeCopy(dir);
  }
}

/** The task with the honest fix, its spec, check node and pristine copies, as a run has them. */
function prepare(dir: string, image: string) {
  const taskDir = join(dir, "task");
  const home = join(dir, "home");
  mkdirSync(home);
  cpSync(TASK, taskDir, { recursive: true });
  writeFileSync(
    join(taskDir, "calc.py"),
    "import sys\n\nvalues = [float(line) for line in open(sys.argv[1]) if line.strip()]\nprint(sum(values) / len(values))\n",
  );
  const samFile = join(taskDir, "task.md");
  const parsed = parseSamSync(samFile);
  if (!parsed.ok) throw new Error(`bench SAM invalid: ${JSON.stringify(parsed.diagnostics)}`);
  const spec: SandboxSpec = {
    ...resolveSpec(parsed.sam, BUILTIN_SITE_POLICY, { home, runId: `bench-views-${process.pid}` }),
    image,
  };
  const pristineDir = join(dir, "pristine");
  const pristine: PristineSet = capturePristine(
    taskDir,
    parsed.sam.metadata.checkAssets.map((rel) => ({ rel, kind: "asset" as const, hidden: false })),
    pristineDir,
  );
  return { spec, node: parsed.sam.root as SamNode, pristine, pristineDir };
}

/** `count` small files in folders of 1,000. */
function manyFilesFolder(dir: string, count: number): void {
  for (let i = 0; i < count; i++) {
    const sub = join(dir, `d${Math.floor(i / 1000)}`);
    if (i % 1000 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.txt`), `${i}\n`);
  }
}

function onTask(spec: SandboxSpec, folder: string): SandboxSpec["mounts"] {
  return spec.mounts.map((m) => (m.source === spec.taskDir ? { ...m, source: folder } : m));
}
