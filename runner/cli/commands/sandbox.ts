// `scifi sandbox prune [--backend NAME]`: remove sandboxes left behind by runs that are not live
// (a crashed or killed runner) of this scifi home. A sandbox whose owning runner process still runs,
// or that another home started, is kept.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  const sandbox = program.command("sandbox").description("Manage sandboxes (containers and instances)");
  sandbox
    .command("prune")
    .description("Remove this home's scifi sandboxes whose runner is gone")
    .option("--backend <name>", "only this backend (default: every available one)")
    .action(async (options: { backend?: string }) => {
      const { backendNames, getBackend } = await import("../../sandbox/registry.ts");
      const { scifiHome } = await import("../../paths.ts");
      const names = options.backend ? [options.backend] : backendNames();
      let failed = false;
      for (const name of names) {
        try {
          const backend = await getBackend(name);
          const status = await backend.status();
          if (!status.available) {
            if (options.backend)
              throw new Error(`${status.detail}${status.fix ? ` (fix: ${status.fix})` : ""}`);
            continue;
          }
          const removed = await backend.prune({ home: scifiHome() });
          process.stdout.write(
            `${name}: removed ${removed.length}${removed.map((r) => `\n  ${r}`).join("")}\n`,
          );
        } catch (error) {
          failed = true;
          process.stderr.write(
            `scifi sandbox prune: ${name}: ${error instanceof Error ? error.message : String(error)}\n`,
          );
        }
      }
      // The checks' views (overlay mounts) that dead runs left: not a backend's, so pruned once.
      try {
        const { pruneCheckViews } = await import("../../run/check-view.ts");
        const views = pruneCheckViews(scifiHome());
        if (views.length > 0) {
          process.stdout.write(
            `checks' views: removed ${views.length}${views.map((v) => `\n  ${v}`).join("")}\n`,
          );
        }
      } catch (error) {
        failed = true;
        process.stderr.write(
          `scifi sandbox prune: checks' views: ${error instanceof Error ? error.message : String(error)}\n`,
        );
      }
      process.exitCode = failed ? (options.backend ? EXIT.usage : EXIT.failed) : EXIT.ok;
    });
}
