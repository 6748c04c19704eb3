// `scifi daemon`: watch the inbox and run every SAM dropped there, unattended (docs/daemon.md).
// Runs until SIGTERM/SIGINT/SIGHUP: then running tasks checkpoint, their sandboxes stop, and it exits 0.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

interface DaemonFlags {
  tasks?: string;
  concurrency?: string;
  backend?: string;
  model?: string;
  modelsConfig?: string;
  sitePolicy?: string;
  logFormat?: string;
  settleMs?: string;
}

export function register(program: Command): void {
  program
    .command("daemon")
    .description("Watch the inbox (tasks/) and run each SAM dropped there; status with 'scifi status'")
    .option("--tasks <dir>", "the inbox folder (default <home>/tasks)")
    .option("--concurrency <n>", "runs at once (default: from cores and memory)")
    .option("--backend <name>", "sandbox backend: docker or apptainer (default docker)")
    .option("--model <spec>", "model for every run: scripted:FILE, scripted-openai:FILE or a models config")
    .option("--models-config <file>", "models config YAML (default <home>/models.yaml)")
    .option("--site-policy <file>", "site policy YAML (default <home>/site-policy.yaml)")
    .option("--log-format <format>", "log lines as text or json", "text")
    .option("--settle-ms <ms>", "a SAM must stay unchanged this long before it is taken", "1000")
    .action(async (flags: DaemonFlags) => {
      process.exitCode = await daemonCommand(flags);
    });
}

async function daemonCommand(flags: DaemonFlags): Promise<number> {
  if (flags.model && flags.modelsConfig) return usage("give either --model or --models-config, not both");
  if (flags.logFormat !== "text" && flags.logFormat !== "json")
    return usage(`--log-format must be text or json, not '${flags.logFormat}'`);
  const concurrency = flags.concurrency === undefined ? undefined : positiveInt(flags.concurrency);
  if (concurrency === null)
    return usage(`--concurrency must be a whole number >= 1, not '${flags.concurrency}'`);
  const settleMs = positiveInt(flags.settleMs ?? "1000");
  if (settleMs === null) return usage(`--settle-ms must be a whole number >= 1, not '${flags.settleMs}'`);
  const { scifiHome } = await import("../../paths.ts");
  const { Daemon } = await import("../../daemon/daemon.ts");
  const { DaemonLocked } = await import("../../daemon/lock.ts");
  let daemon: InstanceType<typeof Daemon>;
  try {
    daemon = new Daemon({
      home: scifiHome(),
      inbox: flags.tasks,
      concurrency,
      backend: flags.backend,
      model: flags.model ?? flags.modelsConfig,
      sitePolicy: flags.sitePolicy,
      logFormat: flags.logFormat,
      settleMs,
    });
    await daemon.start();
  } catch (error) {
    if (error instanceof DaemonLocked) {
      process.stderr.write(`scifi daemon: ${error.message}\n`);
      return EXIT.failed;
    }
    return usage(error instanceof Error ? error.message : String(error));
  }
  // The daemon's own shutdown ends the process; the live registry (sandbox/live.ts) defers to it.
  const { deferSignals } = await import("../../sandbox/live.ts");
  const undefer = deferSignals();
  await new Promise<void>((resolve) => {
    // One shutdown, however many signals arrive: a signal to the process group reaches both
    // bin/scifi.js's launcher, which passes it on, and the daemon.
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      void daemon.stop().then(resolve);
    };
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.on(signal, stop);
  });
  undefer();
  return EXIT.ok;
}

function positiveInt(text: string): number | null {
  return /^\d+$/.test(text) && Number(text) >= 1 ? Number(text) : null;
}

function usage(message: string): number {
  process.stderr.write(`scifi daemon: ${message}\n`);
  return EXIT.usage;
}
