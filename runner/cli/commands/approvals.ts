// `scifi approvals [--json]`, `scifi approve <run> <request> [--note TEXT]`,
// `scifi deny <run> <request> --reason TEXT`: a person decides what runs wait for (docs/approval.md).
// The decision goes to the run folder (never mounted in a sandbox); the waiting run picks it up,
// whichever process drives it, and records it on its history and audit tapes.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";

export function register(program: Command): void {
  const approvals = program
    .command("approvals")
    .description("List the approval requests runs are waiting for, across the home")
    .option("--json", "one JSON array with each request in full")
    .addHelpText("after", "\n  scifi approvals show <run> <request>   one request in full")
    .action(async (opts: { json?: boolean }) => {
      const { scifiHome } = await import("../../paths.ts");
      const { pendingApprovals } = await import("../../approval/store.ts");
      const pending = pendingApprovals(scifiHome());
      if (opts.json) {
        const { visibleJson } = await import("../../terminal-text.ts");
        process.stdout.write(
          `${visibleJson(
            pending.map((v) => ({ run: v.runId, ...v.request, type: undefined })),
            2,
          )}\n`,
        );
        return;
      }
      if (pending.length === 0) {
        process.stdout.write("no approval requests are waiting\n");
        return;
      }
      const { renderRequest } = await import("../../approval/render.ts");
      const home = scifiHome();
      for (const { runId, request } of pending) {
        process.stdout.write(`${[...renderRequest(runId, request, { home }), ""].join("\n")}\n`);
      }
    });
  approvals
    .command("show")
    .description("One request in full (every line of its detail), whatever its state")
    .argument("<run-or-request>", "run id, or a request id alone when only one run has it")
    .argument("[request]", "request id as 'scifi approvals' lists it")
    .action(async (first: string, second: string | undefined) => {
      process.exitCode = await showCommand(first, second);
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

async function showCommand(first: string, second: string | undefined): Promise<number> {
  const { scifiHome } = await import("../../paths.ts");
  const { homePaths } = await import("../../paths.ts");
  const { runApprovals } = await import("../../approval/store.ts");
  const { renderRequest } = await import("../../approval/render.ts");
  const { visible } = await import("../../terminal-text.ts");
  const { existsSync, readdirSync } = await import("node:fs");
  const home = scifiHome();
  const runIds =
    second !== undefined
      ? [first]
      : existsSync(homePaths(home).runs)
        ? readdirSync(homePaths(home).runs).sort()
        : [];
  const id = second ?? first;
  if (second !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(first)) {
    process.stderr.write(`scifi approvals show: '${visible(first)}' is not a run id\n`);
    return EXIT.usage;
  }
  const found = runIds.flatMap((runId) => runApprovals(home, runId).filter((v) => v.request.id === id));
  if (found.length !== 1) {
    process.stderr.write(
      found.length === 0
        ? `scifi approvals show: no request '${visible(id)}'${second !== undefined ? ` in run ${visible(first)}` : ""}; 'scifi approvals' lists the pending ones\n`
        : `scifi approvals show: request '${visible(id)}' is in ${found.length} runs (${found.map((v) => v.runId).join(", ")}): give the run too\n`,
    );
    return EXIT.usage;
  }
  const [view] = found;
  if (!view) return EXIT.usage;
  const state = view.decision
    ? `${view.state} by ${visible(view.decision.who)} at ${visible(view.decision.time)}${view.decision.note ? `: ${visible(view.decision.note)}` : ""}`
    : view.state;
  process.stdout.write(
    `${[...renderRequest(view.runId, view.request, { home, full: true }), `  state: ${state}`].join("\n")}\n`,
  );
  return EXIT.ok;
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
