// `scifi memory list|accept|reject`: the person's side of global memory. Final reviews only propose
// global suggestions (memory/global.proposed.md); these commands list them and accept one into
// memory/global.md (which every later pre-scan reads) or reject it. Both files stay append-only.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  const memory = program
    .command("memory")
    .description(
      "Global memory proposals from final reviews: list them, accept one into global memory, or reject it",
    );
  memory
    .command("list")
    .description("List global memory proposals (pending ones; --all for decided ones too)")
    .option("--all", "also list accepted and rejected proposals")
    .action(async (options: { all?: boolean }) => {
      const { scifiHome } = await import("../../paths.ts");
      const { listProposals, renderProposal } = await import("../../memory/proposals.ts");
      const proposals = listProposals(scifiHome()).filter((p) => options.all || p.status === "pending");
      if (proposals.length === 0) process.stdout.write("no pending global memory proposals\n");
      // A final review wrote these: shown as they are (an ESC[8m span, a CR), never obeyed.
      for (const p of proposals) process.stdout.write(`${renderProposal(p).join("\n")}\n`);
      process.exitCode = EXIT.ok;
    });
  for (const verb of ["accept", "reject"] as const) {
    memory
      .command(verb)
      .description(
        verb === "accept"
          ? "Accept a proposal: its suggestions become global memory, read by every later run"
          : "Reject a proposal: it never reaches global memory",
      )
      .argument("<id>", "proposal id as 'scifi memory list' shows it (or a unique prefix)")
      .action(async (id: string) => {
        const { scifiHome } = await import("../../paths.ts");
        const { acceptProposal, rejectProposal, ProposalError } = await import("../../memory/proposals.ts");
        try {
          const p = await (verb === "accept" ? acceptProposal : rejectProposal)(scifiHome(), id);
          process.stdout.write(`${p.id}: ${p.status}\n`);
          process.exitCode = EXIT.ok;
        } catch (error) {
          process.stderr.write(
            `scifi memory ${verb}: ${error instanceof Error ? error.message : String(error)}\n`,
          );
          process.exitCode = error instanceof ProposalError ? EXIT.usage : EXIT.failed;
        }
      });
  }
}
