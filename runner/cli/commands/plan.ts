// `scifi plan <task> [--json] [--site-policy FILE]`: print what a run of the task would be granted.
// Exit 0: resolved; 2: the policy refuses the task (like `scifi run`), or an invalid SAM, path or
// site policy file.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  program
    .command("plan")
    .description(
      "Show the sandbox a task would get (mounts, network, GPUs, limits, image) without running it",
    )
    .argument("<task>", "SAM file, or a task folder holding task.md")
    .option("--json", "print the resolved spec as JSON")
    .option(
      "--site-policy <file>",
      "site policy YAML (default: env SCIFI_SITE_POLICY, then <home>/site-policy.yaml)",
    )
    .action(async (task: string, options: { json?: boolean; sitePolicy?: string }) => {
      const { planTask } = await import("../plan-task.ts");
      const outcome = planTask(task, {
        json: options.json === true,
        ...(options.sitePolicy ? { sitePolicy: options.sitePolicy } : {}),
        out: process.stdout,
        err: process.stderr,
      });
      // A refusal is input the user can fix (the SAM or the site policy): exit 2, as `scifi run` does.
      process.exitCode = outcome === "ok" ? EXIT.ok : EXIT.usage;
    });
}
