// `scifi evolve`: statistics over runs and evals become proposals (ranks, skills, memory, prompts)
// with their evidence; `evolve apply <id> --note` and `evolve reject <id>` are a person's decision,
// recorded append-only. Nothing changes without that decision (docs/evolve.md).
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visibleJson } from "../../terminal-text.ts";

interface EvolveFlags {
  runs?: string;
  evals?: string[];
  models?: string;
  prompt?: string;
  model?: string;
  json?: boolean;
  write: boolean;
  alpha?: string;
  minPasses?: string;
  minRuns?: string;
}

function whole(value: string | undefined, flag: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new UsageError(`${flag} must be a whole number >= ${min}, got '${value}'`);
  return n;
}

class UsageError extends Error {}

export function register(program: Command): void {
  const evolve = program
    .command("evolve")
    .description(
      "Statistics over runs and evals (per model, rank and role; per task group) and proposals with their evidence; a person applies or rejects them",
    )
    .option("--runs <dir>", "folder of run folders (default: <home>/runs)")
    .option("--evals <id...>", "eval ids under <home>/evals (or eval folders) whose trials to read")
    .option("--models <file>", "models.yaml to compute rank changes on (default: <home>/models.yaml)")
    .option("--prompt <file>", "prompt file a prompt proposal appends to (default: the work agent's prompt)")
    .option(
      "--model <spec>",
      "summarise recurring findings with this model (scripted:FILE, replay:RUN or a models config)",
    )
    .option("--alpha <p>", "significance level of the rank tests (default 0.05)")
    .option("--min-passes <n>", "work passes a model needs at a rank to be tested (default 8)")
    .option("--min-runs <n>", "runs a failing check or finding must recur in (default 3)")
    .option("--no-write", "print only; write no proposal to <home>/evolve/")
    .option("--json", "the statistics and proposals as JSON")
    .action(async (flags: EvolveFlags) => {
      const { scifiHome } = await import("../../paths.ts");
      const { evolve } = await import("../../evolve/evolve.ts");
      const { renderResult } = await import("../../evolve/render.ts");
      const home = scifiHome();
      let session: import("../../helpers/session.ts").HelperSession | undefined;
      try {
        const alpha = flags.alpha === undefined ? undefined : Number(flags.alpha);
        if (alpha !== undefined && !(alpha > 0 && alpha < 1))
          throw new UsageError(`--alpha must be a number between 0 and 1, got '${flags.alpha}'`);
        const minPasses = whole(flags.minPasses, "--min-passes", 1);
        const minRuns = whole(flags.minRuns, "--min-runs", 1);
        let summarise: Parameters<typeof evolve>[0]["summarise"];
        if (flags.model) {
          const { openHelperSession } = await import("../../helpers/session.ts");
          const { summariseFindings } = await import("../../evolve/summarise.ts");
          session = await openHelperSession({ home, helper: "evolve", modelSpec: flags.model });
          const open = session;
          summarise = (findings) => summariseFindings(open, findings);
        }
        const result = await evolve({
          home,
          ...(flags.runs ? { runsDir: flags.runs } : {}),
          ...(flags.evals ? { evals: flags.evals } : {}),
          ...(flags.models ? { modelsFile: flags.models } : {}),
          ...(flags.prompt ? { promptFile: flags.prompt } : {}),
          ...(summarise ? { summarise } : {}),
          ...(alpha !== undefined ? { alpha } : {}),
          ...(minPasses !== undefined ? { minPasses } : {}),
          ...(minRuns !== undefined ? { minRuns } : {}),
          write: flags.write,
        });
        process.stdout.write(flags.json ? `${visibleJson(result, 2)}\n` : renderResult(result));
        process.exitCode = EXIT.ok;
      } catch (error) {
        process.stderr.write(`scifi evolve: ${error instanceof Error ? error.message : String(error)}\n`);
        process.exitCode =
          error instanceof UsageError || (error as Error).name === "HelperSetupError"
            ? EXIT.usage
            : EXIT.failed;
      } finally {
        await session?.close();
      }
    });

  evolve
    .command("list")
    .description("List the proposals in <home>/evolve/ and their status")
    .action(async () => {
      const { scifiHome } = await import("../../paths.ts");
      const { listStored } = await import("../../evolve/store.ts");
      const { visible } = await import("../../terminal-text.ts");
      const all = listStored(scifiHome());
      if (all.length === 0) process.stdout.write("no proposals (run 'scifi evolve')\n");
      for (const { proposal, status } of all)
        process.stdout.write(
          `${visible(proposal.id)}  [${status}]  ${proposal.kind}: ${visible(proposal.title)}\n`,
        );
      process.exitCode = EXIT.ok;
    });

  evolve
    .command("show")
    .description("Show one proposal: its evidence and the diff apply would make")
    .argument("<id>", "proposal id")
    .action(async (id: string) => {
      const { scifiHome } = await import("../../paths.ts");
      const { readProposal, statusOf } = await import("../../evolve/store.ts");
      const { renderProposal } = await import("../../evolve/render.ts");
      await decideOrExplain("show", async () => {
        const home = scifiHome();
        const proposal = readProposal(home, id);
        process.stdout.write(
          `${renderProposal(proposal, statusOf(home).get(id)?.decision ?? "pending").join("\n")}\n`,
        );
      });
    });

  evolve
    .command("apply")
    .description("Apply a proposal: make its change (exactly its diff) and record who, when and why")
    .argument("<id>", "proposal id")
    .requiredOption("--note <text>", "why the change is made (recorded with it)")
    .action(async (id: string, flags: { note: string }) => {
      const { scifiHome } = await import("../../paths.ts");
      const { applyProposal, readProposal } = await import("../../evolve/store.ts");
      const { visible, visibleLines } = await import("../../terminal-text.ts");
      await decideOrExplain("apply", async () => {
        const home = scifiHome();
        const proposal = readProposal(home, id);
        const decision = await applyProposal(home, id, { note: flags.note });
        const lines = [`${visible(id)}: applied by ${visible(decision.who)} at ${decision.at}`];
        if (proposal.change)
          lines.push(
            `changed ${visible(proposal.change.file)}:`,
            ...visibleLines(proposal.change.diff.replace(/\n$/, ""), { prefix: "  " }),
          );
        if (proposal.memory) lines.push(`accepted global memory proposal ${visible(proposal.memory.accept)}`);
        if (proposal.command) lines.push(`next: ${proposal.command.map(visible).join(" ")}`);
        process.stdout.write(`${lines.join("\n")}\n`);
      });
    });

  evolve
    .command("reject")
    .description("Reject a proposal: nothing changes; the decision is recorded")
    .argument("<id>", "proposal id")
    .option("--note <text>", "why (recorded with the decision)", "")
    .action(async (id: string, flags: { note: string }) => {
      const { scifiHome } = await import("../../paths.ts");
      const { rejectProposal } = await import("../../evolve/store.ts");
      const { visible } = await import("../../terminal-text.ts");
      await decideOrExplain("reject", async () => {
        const decision = rejectProposal(scifiHome(), id, { note: flags.note });
        process.stdout.write(`${visible(id)}: rejected by ${visible(decision.who)} at ${decision.at}\n`);
      });
    });
}

async function decideOrExplain(verb: string, body: () => Promise<void>): Promise<void> {
  const { EvolveError } = await import("../../evolve/store.ts");
  try {
    await body();
    process.exitCode = EXIT.ok;
  } catch (error) {
    process.stderr.write(`scifi evolve ${verb}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = error instanceof EvolveError ? EXIT.usage : EXIT.failed;
  }
}
