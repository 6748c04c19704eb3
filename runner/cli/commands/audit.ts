// `scifi audit verify|show|stats <run>`: check a run's audit tape, print it, or total it up.
import type { Command } from "commander";
import { EXIT } from "../../exit-codes.ts";
import { visibleJson } from "../../terminal-text.ts";

interface JsonOption {
  json?: boolean;
}

export function register(program: Command): void {
  const audit = program
    .command("audit")
    .description(
      "Inspect a run's audit tape (every LLM call, hash-chained). <run> is a run folder, a tape file or a run id.",
    );

  audit
    .command("verify <run>")
    .description(
      "Check the hash chain, the heads recorded in state.json and the history, and the MACs when a key is given: exit 0 when intact, 1 with the first bad line otherwise",
    )
    .option("--json", "print the result as JSON")
    .option("--key <file>", "the site's audit key (default: SCIFI_AUDIT_KEY_FILE or SCIFI_AUDIT_KEY)")
    .action(async (run: string, options: JsonOption & { key?: string }) => {
      const { verifyTape } = await import("../../audit/verify.ts");
      const { readAnchors } = await import("../../audit/anchor.ts");
      const { auditKeyFromEnv, readAuditKeyFile } = await import("../../audit/key.ts");
      const { dirname } = await import("node:path");
      const path = await tapePath(run);
      if (!path) return;
      let key: Buffer | undefined;
      try {
        key = options.key ? readAuditKeyFile(options.key) : auditKeyFromEnv();
      } catch (error) {
        process.stderr.write(`scifi audit: ${(error as Error).message}\n`);
        process.exitCode = EXIT.usage;
        return;
      }
      const { anchors, problems, runFolder } = readAnchors(dirname(path));
      for (const problem of problems)
        process.stderr.write(`scifi audit: WARNING cannot read a recorded head: ${problem}\n`);
      const result = verifyTape(path, { anchors, ...(key ? { key } : {}) });
      if (options.json) process.stdout.write(`${visibleJson({ tape: path, ...result })}\n`);
      else if (result.ok)
        process.stdout.write(`${path}: intact, ${result.records} records; ${levels(result, runFolder)}\n`);
      else process.stdout.write(`${path}:${result.line}: ${result.reason}\n`);
      process.exitCode = result.ok ? EXIT.ok : EXIT.failed;
    });

  audit
    .command("show <run>")
    .description("Readable transcript: calls, thinking, tool calls, verdicts, costs")
    .option("--json", "print the per-call summaries as JSON")
    .option(
      "--call <id>",
      "print the full text of one tool call's output (the id an elided output's placeholder names) and the record holding it",
    )
    .action(async (run: string, options: JsonOption & { call?: string }) => {
      if (options.call !== undefined) return showOutput(run, options.call, options.json === true);
      const summary = await loadSummary(run);
      if (!summary) return;
      const { renderTranscript } = await import("../../audit/render.ts");
      process.stdout.write(`${options.json ? visibleJson(summary, 2) : renderTranscript(summary)}\n`);
    });

  audit
    .command("stats <run>")
    .description("Calls, tokens by kind, cache-read share, USD and wall time, per role and per model")
    .option("--json", "print the totals as JSON")
    .action(async (run: string, options: JsonOption) => {
      const summary = await loadSummary(run);
      if (!summary) return;
      const { renderStats } = await import("../../audit/render.ts");
      const { calls: _calls, ...totals } = summary;
      process.stdout.write(`${options.json ? visibleJson(totals, 2) : renderStats(summary)}\n`);
    });
}

/** What an intact tape was checked against, in words. */
function levels(
  result: Extract<import("../../audit/types.ts").VerifyResult, { ok: true }>,
  runFolder: boolean,
): string {
  const anchor = result.anchors
    ? `head anchored (seq ${result.anchors.seq} recorded in ${result.anchors.sources.join(", ")}; ${result.anchors.count} head(s) checked)`
    : runFolder
      ? "not anchored: no head recorded in state.json or the history (a run from an older scifi), so a dropped tail or a re-chained tape would go unseen"
      : "not anchored: no state.json next to the tape, so a dropped tail or a re-chained tape would go unseen";
  const macs =
    result.macs === "verified"
      ? "MACs verified with the audit key"
      : result.macs === "unchecked"
        ? "lines carry MACs, not checked (give the audit key: --key FILE or SCIFI_AUDIT_KEY)"
        : "no MACs (no audit key was set when it was written)";
  return `${anchor}; ${macs}`;
}

/** The tape path, or undefined after reporting a usage error (exit 2). */
async function tapePath(run: string): Promise<string | undefined> {
  const { resolveTapePath } = await import("../../audit/run-path.ts");
  const { scifiHome } = await import("../../paths.ts");
  try {
    return resolveTapePath(run, scifiHome());
  } catch (error) {
    process.stderr.write(`scifi audit: ${(error as Error).message}\n`);
    process.exitCode = EXIT.usage;
    return undefined;
  }
}

/** `audit show --call ID`: the first record holding that tool call's output, in full. */
async function showOutput(run: string, callId: string, json: boolean): Promise<void> {
  const path = await tapePath(run);
  if (!path) return;
  const { readTape, verifyTape } = await import("../../audit/verify.ts");
  const { findToolOutput } = await import("../../audit/tool-output.ts");
  const { LISTING_WIDTH, visible, visibleLines } = await import("../../terminal-text.ts");
  const check = verifyTape(path);
  if (!check.ok) process.stderr.write(`scifi audit: WARNING ${path}:${check.line}: ${check.reason}\n`);
  const found = findToolOutput(readTape(path), callId);
  if (!found) {
    process.stderr.write(
      `scifi audit: no record of ${path} holds the output of tool call ${visibleJson(callId)}; the ids are in 'scifi audit show ${run} --json' (toolCalls)\n`,
    );
    process.exitCode = EXIT.failed;
    return;
  }
  if (json) {
    process.stdout.write(`${visibleJson({ tape: path, callId, ...found }, 2)}\n`);
    return;
  }
  const where = [
    found.role,
    found.iteration !== undefined ? `iter ${found.iteration}` : "",
    found.step !== undefined ? `step ${found.step}` : "",
  ].filter(Boolean);
  const holder = found.where === "request" ? "the request of call" : "tool_output event";
  process.stdout.write(
    `${visible(`#${found.seq} ${holder} (${where.join(", ")}): output of tool call ${callId}, ${found.text.length} characters${found.isError ? " (an error)" : ""}`)}\n`,
  );
  // The output is the agent's: every row marked (`  | `, `  |+ ` where a long line folds), so no line
  // of it reads as this command's header (`--json` gives it raw).
  const body = visibleLines(found.text, { prefix: "  | ", width: LISTING_WIDTH, continuation: "  |+ " });
  process.stdout.write(`${body.join("\n")}\n(end of the output: ${found.text.length} characters)\n`);
}

async function loadSummary(run: string) {
  const path = await tapePath(run);
  if (!path) return undefined;
  const { readTape, verifyTape } = await import("../../audit/verify.ts");
  const { summarizeTape } = await import("../../audit/summary.ts");
  const check = verifyTape(path);
  if (!check.ok) {
    // Still show what is there, but say loudly that the record cannot be trusted.
    process.stderr.write(`scifi audit: WARNING ${path}:${check.line}: ${check.reason}\n`);
  }
  try {
    return summarizeTape(readTape(path));
  } catch (error) {
    process.stderr.write(`scifi audit: cannot read ${path}: ${(error as Error).message}\n`);
    process.exitCode = EXIT.failed;
    return undefined;
  }
}
