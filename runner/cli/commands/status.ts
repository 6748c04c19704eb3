// `scifi status [--watch] [--json]`: the daemon's tasks (state, iteration, cost, age) and tasks
// placed on SLURM with `scifi submit`.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visibleJson } from "../../terminal-text.ts";

interface StatusFlags {
  watch?: boolean;
  json?: boolean;
  interval?: string;
}

export function register(program: Command): void {
  program
    .command("status")
    .description("List the daemon's tasks with state, iteration, cost and age (and SLURM-submitted tasks)")
    .option("--watch", "refresh until interrupted")
    .option("--json", "print the report as JSON")
    .option("--interval <seconds>", "refresh interval for --watch", "2")
    .action(async (flags: StatusFlags) => {
      process.exitCode = await statusCommand(flags);
    });
}

async function statusCommand(flags: StatusFlags): Promise<number> {
  const interval = Number(flags.interval);
  if (!Number.isFinite(interval) || interval <= 0) {
    process.stderr.write(
      `scifi status: --interval must be a positive number of seconds, not '${flags.interval}'\n`,
    );
    return EXIT.usage;
  }
  const { scifiHome } = await import("../../paths.ts");
  const { statusReport, renderStatus } = await import("../../daemon/status.ts");
  const home = scifiHome();
  const print = async () => {
    const report = await statusReport(home);
    return flags.json ? `${visibleJson(report, 2)}\n` : renderStatus(report);
  };
  if (!flags.watch) {
    process.stdout.write(await print());
    return EXIT.ok;
  }
  let stopped = false;
  process.once("SIGINT", () => {
    stopped = true;
  });
  while (!stopped) {
    const text = await print();
    // Clear the screen on a terminal; a pipe gets one report after another.
    process.stdout.write(process.stdout.isTTY ? `\x1b[H\x1b[2J${text}` : `${text}\n`);
    await new Promise((r) => setTimeout(r, interval * 1000));
  }
  return EXIT.ok;
}
