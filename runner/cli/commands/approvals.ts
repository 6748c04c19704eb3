// `scifi approvals [--json]`, `scifi approve <run> <request> [--note TEXT]`,
// `scifi deny <run> <request> --reason TEXT`: a person decides what runs wait for (docs/approval.md).
// The decision goes to the run folder (never mounted in a sandbox); the waiting run picks it up,
// whichever process drives it, and records it on its history and audit tapes.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  program
    .command("approvals")
    .description("List the approval requests runs are waiting for, across the home")
    .option("--json", "one JSON array with each request in full")
    .action(async (opts: { json?: boolean }) => {
      const { scifiHome } = await import("../../paths.ts");
      const { pendingApprovals } = await import("../../approval/store.ts");
      const pending = pendingApprovals(scifiHome());
      if (opts.json) {
        process.stdout.write(
          `${JSON.stringify(
            pending.map((v) => ({ run: v.runId, ...v.request, type: undefined })),
            null,
            2,
          )}\n`,
        );
        return;
      }
      if (pending.length === 0) {
        process.stdout.write("no approval requests are waiting\n");
        return;
      }
      for (const { runId, request } of pending) {
        process.stdout.write(
          [
            `${runId} ${request.id}  ${request.action}: ${request.summary}`,
            `  why: ${request.why}; asked ${request.time}; blocked after ${request.deadline}`,
            ...request.detail
              .split("\n")
              .slice(0, 40)
              .map((line) => `  | ${line}`),
            `  decide: scifi approve ${runId} ${request.id} [--note TEXT] | scifi deny ${runId} ${request.id} --reason TEXT`,
            "",
          ].join("\n"),
        );
      }
    });

  program
    .command("approve")
    .description("Approve a request a run waits for")
    .argument("<run>", "run id")
    .argument("<request>", "request id as 'scifi approvals' lists it")
    .option("--note <text>", "a note kept with the decision")
    .action(async (run: string, request: string, opts: { note?: string }) => {
      await decideCommand("approve", run, request, true, opts.note);
    });

  program
    .command("deny")
    .description("Deny a request a run waits for; the agent gets the reason")
    .argument("<run>", "run id")
    .argument("<request>", "request id as 'scifi approvals' lists it")
    .requiredOption("--reason <text>", "why (the agent reads it and may take another way)")
    .action(async (run: string, request: string, opts: { reason: string }) => {
      await decideCommand("deny", run, request, false, opts.reason);
    });
}

async function decideCommand(
  verb: string,
  run: string,
  request: string,
  approved: boolean,
  note: string | undefined,
): Promise<void> {
  const { scifiHome } = await import("../../paths.ts");
  const { decide, ApprovalNotPending } = await import("../../approval/store.ts");
  try {
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(run)) throw new ApprovalNotPending(`'${run}' is not a run id`);
    const decision = decide(scifiHome(), run, request, approved, note);
    process.stdout.write(
      `${run} ${request}: ${approved ? "approved" : "denied"} by ${decision.who} at ${decision.time}\n`,
    );
    process.exitCode = EXIT.ok;
  } catch (error) {
    process.stderr.write(`scifi ${verb}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = error instanceof ApprovalNotPending ? EXIT.usage : EXIT.failed;
  }
}
