// The scifi command line. Each command lives in runner/cli/commands/<name>.ts and exports
// `register(program)`; its action imports the heavy modules lazily so `scifi --help` stays fast.
import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { EXIT } from "../exit-codes.ts";
import { register as registerApprovals } from "./commands/approvals.ts";
import { register as registerAsk } from "./commands/ask.ts";
import { register as registerAudit } from "./commands/audit.ts";
import { register as registerCancel } from "./commands/cancel.ts";
import { register as registerCheckTask } from "./commands/check-task.ts";
import { register as registerCritique } from "./commands/critique.ts";
import { register as registerCtl } from "./commands/ctl.ts";
import { register as registerDaemon } from "./commands/daemon.ts";
import { register as registerDoctor } from "./commands/doctor.ts";
import { register as registerEval } from "./commands/eval.ts";
import { register as registerEvolve } from "./commands/evolve.ts";
import { register as registerExport } from "./commands/export.ts";
import { register as registerImport } from "./commands/import.ts";
import { register as registerMakeSkill } from "./commands/make-skill.ts";
import { register as registerMakeTask } from "./commands/make-task.ts";
import { register as registerMemory } from "./commands/memory.ts";
import { register as registerOracle } from "./commands/oracle.ts";
import { register as registerPlan } from "./commands/plan.ts";
import { register as registerReport } from "./commands/report.ts";
import { register as registerRetry } from "./commands/retry.ts";
import { register as registerRun } from "./commands/run.ts";
import { register as registerSandbox } from "./commands/sandbox.ts";
import { register as registerStatus } from "./commands/status.ts";
import { register as registerSubmit } from "./commands/submit.ts";
import { register as registerValidate } from "./commands/validate.ts";

const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
  version: string;
};

export function buildProgram(): Command {
  const program = new Command("scifi")
    .description(
      "Sandboxed autonomous task runner for scientists: SAM tasks, default-deny containers, audited agents.",
    )
    .version(pkg.version)
    .showHelpAfterError()
    .exitOverride();
  // Commands, in the order `--help` lists them.
  const registrations: ((p: Command) => void)[] = [
    registerValidate,
    registerPlan,
    registerRun,
    registerAudit,
    registerReport,
    registerExport,
    registerSubmit,
    registerEval,
    registerCheckTask,
    registerDaemon,
    registerStatus,
    registerCancel,
    registerCtl,
    registerApprovals,
    registerRetry,
    registerImport,
    registerMakeTask,
    registerOracle,
    registerCritique,
    registerMakeSkill,
    registerMemory,
    registerEvolve,
    registerAsk,
    registerDoctor,
    registerSandbox,
  ];
  for (const register of registrations) register(program);
  return program;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: "user" });
    return process.exitCode === undefined ? EXIT.ok : Number(process.exitCode);
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version exit 0; bad usage exits 2.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    process.stderr.write(`scifi: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failed;
  }
}
