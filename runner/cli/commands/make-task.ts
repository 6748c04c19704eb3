// `scifi make-task "<request>"`: drafts a SAM with the task maker, validates and repairs it, and
// writes it for the user to review. Nothing is run; grants the request did not name are withheld.
import type { Command } from "commander";

interface MakeTaskFlags {
  output?: string;
  model?: string;
  rank: string;
  force?: boolean;
  toInbox?: boolean;
}

export function register(program: Command): void {
  program
    .command("make-task")
    .description(
      "Draft a SAM task from a plain-language request (validated, never run; grants only what you name)",
    )
    .argument("<request>", "what the task should do, in plain language")
    .option("-o, --output <file>", "where to write the SAM (default: <name>.md in the current folder)")
    .option("--to-inbox", "write it into the daemon's inbox (tasks/), where a running daemon starts it")
    .option("--model <spec>", "model: scripted:FILE, replay:RUN or a models config (default: models.yaml)")
    .option("--rank <n>", "model rank for the task maker", "1")
    .option("--force", "replace the output file if it exists")
    .action(async (request: string, flags: MakeTaskFlags) => {
      const { runMakeTask } = await import("../../helpers/make-task/command.ts");
      const { scifiHome } = await import("../../paths.ts");
      const { daemonPaths } = await import("../../daemon/records.ts");
      const { liveOwner } = await import("../../daemon/lock.ts");
      // A running daemon's inbox may be elsewhere than <home>/tasks (`scifi daemon --inbox`).
      const live = liveOwner(daemonPaths(scifiHome()).lock)?.inbox;
      process.exitCode = await runMakeTask(request, { ...flags, ...(live ? { inboxes: [live] } : {}) });
    });
}
