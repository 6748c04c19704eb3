// `scifi eval <suite> --models A,B --repeats N [--concurrency K] [--budget-usd X] [--slurm]`: every
// (task, variant, model, repeat) of a suite as one normal scifi run on a fresh copy of its task
// folder, one durable result.json per trial, statistics after every trial (docs/eval.md).
// `scifi eval --resume <id> [--retry-errors]` runs only what has no result; `scifi eval report <id>`
// writes the page; `scifi eval trial <id> <trial>` is what a SLURM job of `--slurm` runs.
// Exit 0: every planned trial has a result and none is an error; 1: some trial is an error or was
// not run (budget spent, interrupted); 2: bad input.
import type { Command } from "commander";
import * as terminal from "../../eval/terminal.ts";
import { EXIT } from "../../exit-codes.ts";
import { visible, visibleJson } from "../../terminal-text.ts";

interface EvalFlags {
  /** Every `--models` value, in order (repeatable; each may be comma-separated). */
  models?: string[];
  repeats?: string;
  concurrency?: string;
  budgetUsd?: string;
  slurm?: boolean;
  backend?: string;
  resume?: string;
  retryErrors?: boolean;
  json?: boolean;
  /** `--no-audit` sets it false (commander's negation); default true. */
  audit?: boolean;
}

export function register(program: Command): void {
  const command = program
    .command("eval")
    .description(
      "Evaluate models on a suite: every task x variant x model x repeat is a scifi run; durable results, pass rates with intervals, pass@k, cost per pass, paired comparisons",
    )
    .argument("[suite]", "a suite file (YAML) or a folder of task folders")
    .option(
      "--models <specs>",
      "model specs, comma-separated or repeated: provider:model sets the work model and keeps the rest of <home>/models.yaml (anthropic:claude-sonnet-5, openai:gpt-5@http://host:8000/v1); scripted:FILE; a models config file; default: the suite file's",
      (value: string, before: string[] | undefined) => [...(before ?? []), value],
    )
    .option("--repeats <n>", "trials per task, variant and model (default: the suite file's, else 1)")
    .option("--concurrency <k>", "trials at a time (default: the suite file's, else 4)")
    .option(
      "--budget-usd <x>",
      "stop scheduling trials once this much is spent (with --resume: the new budget)",
    )
    .option("--slurm", "run each trial as a SLURM job (scifi submit's path)")
    .option("--backend <name>", "sandbox backend (default docker; with --slurm: auto)")
    .option("--resume <id>", "continue this eval: run only the trials without a result")
    .option(
      "--retry-errors",
      "with --resume: also run again the trials that ended in an infrastructure error",
    )
    .option("--json", "print the summary as JSON on stdout at the end")
    .option(
      "--no-audit",
      "do not audit each task's checks before its trials (scifi check-task); recorded in eval.json",
    )
    .action(async (suite: string | undefined, flags: EvalFlags) => {
      process.exitCode = await evalCommand(suite, flags);
    });
  command
    .command("report")
    .description("write the eval's HTML page from its summary.json and print its path")
    .argument("<id>", "eval id (a folder under <home>/evals/)")
    .action(async (id: string) => {
      const { scifiHome } = await import("../../paths.ts");
      const { evalDirOf, evalFiles } = await import("../../eval/plan.ts");
      const { existsSync } = await import("node:fs");
      const dir = evalDirOf(scifiHome(), id);
      if (!existsSync(evalFiles(dir).summary)) {
        process.stderr.write(
          `scifi eval report: no summary at ${evalFiles(dir).summary} (is '${id}' an eval id?)\n`,
        );
        process.exitCode = EXIT.usage;
        return;
      }
      const { writeEvalReport } = await import("../../eval/page.ts");
      const { loadEvalPageInput } = await import("../../eval/page-load.ts");
      const { comparisonsText, flagsText, impossibleText, variantTableText } = await import(
        "../../eval/terminal.ts"
      );
      // The page's path first (scripts read the first line), then the variant table and the comparisons.
      process.stdout.write(`${writeEvalReport(dir)}\n`);
      const { summary } = loadEvalPageInput(dir);
      process.stdout.write(
        `\n${flagsText(summary)}${variantTableText(summary)}${comparisonsText(summary)}${impossibleText(summary)}`,
      );
      process.exitCode = EXIT.ok;
    });
  command
    .command("trial", { hidden: true })
    .description("run one planned trial of an eval and write its result.json (what a --slurm job runs)")
    .argument("<id>", "eval id")
    .argument("<trial>", "trial id")
    .option("--backend <name>", "sandbox backend on this node")
    .action(async (id: string, trialId: string, _flags: unknown, self: Command) => {
      // `eval` has a --backend of its own, which takes the flag wherever it stands on the line.
      const { backend } = self.optsWithGlobals<{ backend?: string }>();
      process.exitCode = await trialCommand(id, trialId, backend);
    });
}

async function evalCommand(suite: string | undefined, flags: EvalFlags): Promise<number> {
  if (suite && flags.resume) return usage("give either a suite or --resume ID, not both");
  if (!suite && !flags.resume)
    return usage("give a suite (a suite file or a folder of task folders), or --resume ID");
  if (flags.retryErrors && !flags.resume) return usage("--retry-errors goes with --resume ID");
  const number = (name: string, value: string | undefined, integer: boolean, min: number) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n)))
      throw new UsageError(`${name} '${value}' must be ${integer ? "a whole number" : "a number"} >= ${min}`);
    return n;
  };
  const { scifiHome } = await import("../../paths.ts");
  const engine = await import("../../eval/engine.ts");
  const { SuiteError } = await import("../../eval/suite.ts");
  const { ModelSpecError, parseModelSpec, splitModels } = await import("../../eval/model-specs.ts");
  const { ownSignals } = await import("../../sandbox/live.ts");
  let evalId = flags.resume;
  const release = ownSignals((signal) => {
    process.stderr.write(
      `\nscifi eval: ${signal}: stopping the running trials' sandboxes;${evalId ? ` continue with: scifi eval --resume ${evalId}` : ""}\n`,
    );
  });
  // Lines carry trial causes (an agent's blocker text): every non-printing code point shown as an escape.
  const log = (line: string) => process.stderr.write(`${visible(line)}\n`);
  try {
    let outcome: Awaited<ReturnType<typeof engine.driveEval>>;
    if (flags.resume) {
      if (
        flags.models ||
        flags.repeats ||
        flags.concurrency ||
        flags.slurm ||
        flags.backend ||
        flags.audit === false
      )
        return usage(
          "--resume runs the eval's own plan (eval.json); give no --models, --repeats, --concurrency, --slurm, --backend or --no-audit with it (only --budget-usd may change)",
        );
      log(`resuming eval ${flags.resume}`);
      outcome = await engine.resumeEval({
        home: scifiHome(),
        evalId: flags.resume,
        retryErrors: flags.retryErrors === true,
        ...optional("budgetUsd", number("--budget-usd", flags.budgetUsd, false, 0)),
        log,
      });
    } else {
      // A bad spec is named before the suite is read (model-specs.ts: each with what to give).
      const models = flags.models ? splitModels(flags.models) : undefined;
      for (const spec of models ?? []) parseModelSpec(spec);
      outcome = await engine.runEval({
        home: scifiHome(),
        suite: suite as string,
        ...(models ? { models } : {}),
        ...optional("repeats", number("--repeats", flags.repeats, true, 1)),
        ...optional("concurrency", number("--concurrency", flags.concurrency, true, 1)),
        ...optional("budgetUsd", number("--budget-usd", flags.budgetUsd, false, 0)),
        slurm: flags.slurm === true,
        ...(flags.backend ? { backend: flags.backend } : {}),
        audit: flags.audit !== false,
        log,
        onCreated: (dir, plan) => {
          evalId = plan.evalId;
          log(
            `eval ${plan.evalId}: ${plan.trials.length} trials (${plan.tasks.length} task(s), ${plan.models.length} model(s), ${plan.repeats} repeat(s)), ${plan.engine === "slurm" ? "as SLURM jobs" : `${plan.concurrency} at a time`} (records: ${dir})`,
          );
        },
      });
    }
    const { summary } = outcome;
    if (flags.json) process.stdout.write(`${visibleJson(summary, 2)}\n`);
    else process.stdout.write(table(summary));
    process.stdout.write(`summary: ${outcome.evalDir}/summary.json (and summary.csv)\n`);
    process.stdout.write(
      outcome.page.file
        ? `report: ${outcome.page.file}\n`
        : `report: not written (${outcome.page.error}); rebuild with: scifi eval report ${summary.evalId}\n`,
    );
    if (outcome.stoppedByBudget)
      process.stderr.write(
        `scifi eval: stopped scheduling: the budget (USD ${summary.budget.usd}) is spent; ${summary.trials.pending} trial(s) not run (run them with a larger budget: scifi eval --resume ${summary.evalId} --budget-usd X)\n`,
      );
    if (summary.trials.error > 0)
      process.stderr.write(
        `scifi eval: ${summary.trials.error} trial(s) ended in an infrastructure error (not counted as failures); run them again with: scifi eval --resume ${summary.evalId} --retry-errors\n`,
      );
    return summary.trials.pending === 0 && summary.trials.error === 0 ? EXIT.ok : EXIT.failed;
  } catch (error) {
    if (
      error instanceof UsageError ||
      error instanceof engine.EvalInputError ||
      error instanceof SuiteError ||
      error instanceof ModelSpecError
    )
      return usage(error.message);
    process.stderr.write(`scifi eval: ${error instanceof Error ? error.message : String(error)}\n`);
    if (evalId) process.stderr.write(`continue with: scifi eval --resume ${evalId}\n`);
    return EXIT.failed;
  } finally {
    release();
  }
}

async function trialCommand(evalId: string, trialId: string, backend: string | undefined): Promise<number> {
  const { scifiHome } = await import("../../paths.ts");
  const { evalDirOf, readPlan } = await import("../../eval/plan.ts");
  const { runTrial } = await import("../../eval/trial.ts");
  const { ownSignals } = await import("../../sandbox/live.ts");
  const release = ownSignals();
  try {
    const home = scifiHome();
    const evalDir = evalDirOf(home, evalId);
    const plan = readPlan(evalDir);
    const trial = plan.trials.find((t) => t.trialId === trialId);
    if (!trial) return usage(`eval ${evalId} has no trial '${trialId}'`);
    const { refuseTrialRun } = await import("../../eval/engine.ts");
    const refused = await refuseTrialRun(evalDir, plan, trialId);
    if (refused) return usage(refused);
    const result = await runTrial({ home, evalDir, plan: backend ? { ...plan, backend } : plan, trial });
    process.stdout.write(
      `${result.status.toUpperCase()} ${trialId}: ${result.verdict}: ${visible(result.cause)}\n`,
    );
    return EXIT.ok;
  } catch (error) {
    process.stderr.write(`scifi eval trial: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failed;
  } finally {
    release();
  }
}

function table(summary: import("../../eval/summary.ts").EvalSummary): string {
  const { comparisonsText, flagsText, impossibleText, rolesText, variantTableText } = terminal;
  const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
  const lines = summary.groups.map((g) => {
    const model = visible(g.scripted ? `${g.model} [SCRIPTED]` : g.model);
    const cost = g.usdPerPass === null ? "-" : g.usdPerPass.toFixed(4);
    return `${visible(g.task)}\t${visible(g.variant)}\t${model}\t${g.passes}/${g.n} ${pct(g.passRate)} [${pct(g.wilson95[0])}-${pct(g.wilson95[1])}]\terrors ${g.errors}\tUSD/pass ${cost}\titerations ${g.iterations.mean.toFixed(1)}`;
  });
  const t = summary.trials;
  return `${[
    `eval ${summary.evalId}: ${t.pass} pass, ${t.fail} fail, ${t.error} error, ${t.pending} pending of ${t.planned}; USD ${summary.budget.spentUsd.toFixed(4)}`,
    ...lines,
    "",
  ].join(
    "\n",
  )}${rolesText(summary)}${flagsText(summary)}${variantTableText(summary)}${comparisonsText(summary)}${impossibleText(summary)}`;
}

class UsageError extends Error {}

function optional<K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> {
  return value === undefined ? {} : ({ [key]: value } as Record<K, number>);
}

function usage(message: string): number {
  process.stderr.write(`scifi eval: ${message}\n`);
  return EXIT.usage;
}
