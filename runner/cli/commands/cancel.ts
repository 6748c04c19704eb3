// `scifi cancel <task>`: Cancel a daemon task: a queued one never runs, a running one checkpoints and stops.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  program
    .command("cancel")
    .description("Cancel a daemon task: a queued one never runs, a running one checkpoints and stops")
    .argument("<task>", "task key as 'scifi status' lists it (foo.md, foo), or the SAM's path")
    .action(async (task: string) => {
      const { scifiHome } = await import("../../paths.ts");
      const { operate, OperatorError } = await import("../../daemon/operator.ts");
      try {
        const { record, via } = await operate(scifiHome(), task, "cancel");
        const reason = record.reason ? ` (${record.reason})` : "";
        process.stdout.write(
          `${record.key}: ${record.state}${reason}${via === "direct" ? " [no daemon running: status file updated]" : ""}\n`,
        );
        process.exitCode = EXIT.ok;
      } catch (error) {
        process.stderr.write(`scifi cancel: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode = error instanceof OperatorError ? EXIT.usage : EXIT.failed;
      }
    });
}
