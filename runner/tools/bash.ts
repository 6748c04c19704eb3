// bash: run a shell command in the sandbox's task folder. The per-SAM allowlist is checked before
// anything runs; output is capped (head and tail) by defineTool and by the sandbox.
import { z } from "zod";
import { checkCommand } from "./allowlist.ts";
import { defineTool, type ToolContext } from "./tool.ts";

/** Output beyond this per stream is dropped by the sandbox (its tail is then lost, and we say so). */
const COLLECT_BYTES = 8 * 1024 * 1024;

export const bashTool = defineTool({
  name: "bash",
  effect: "exec",
  description: new URL("./bash.md", import.meta.url),
  input: z.strictObject({
    command: z.string().min(1).describe("Shell script, run with `sh -c` in /task."),
    timeout_sec: z
      .number()
      .int()
      .positive()
      .max(86_400)
      .optional()
      .describe("Kill the command after this many seconds (default and maximum set by the runner)."),
  }),
  async execute({ command, timeout_sec }, ctx) {
    if (ctx.allowCommands) {
      const verdict = checkCommand(command, ctx.allowCommands);
      if (!verdict.ok)
        return {
          ok: false,
          output: `Refused: ${verdict.reason}`,
          refused: { rule: "the SAM's allow_commands", detail: verdict.reason },
        };
    }
    const timeoutMs = commandTimeoutMs(ctx, timeout_sec);
    // Collect generously so the head-and-tail cap (defineTool) sees the real tail of long output.
    // The run's wall time reaches the command only through the run's signal (the clock's abort at
    // the deadline, a cancel): a deadline moved while it runs (`scifi ctl`) moves its end too.
    const result = await ctx.sandbox.exec(command, {
      timeoutMs,
      maxOutputBytes: COLLECT_BYTES,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    const stopped = !result.timedOut && ctx.signal?.aborted ? stopReason(ctx.signal) : undefined;
    const parts = [
      `exit code: ${result.timedOut ? "killed (timeout)" : stopped ? "killed (the run stopped)" : result.exitCode}`,
    ];
    if (result.truncated)
      parts.push(`Output beyond ${COLLECT_BYTES / 1024 / 1024} MiB per stream was dropped.`);
    if (result.timedOut) parts.push(`The command ran longer than ${timeoutMs / 1000} s and was killed.`);
    if (stopped) parts.push(`The command was killed because the run stopped: ${stopped}.`);
    if (result.stdout) parts.push(`stdout:\n${result.stdout}`);
    if (result.stderr) parts.push(`stderr:\n${result.stderr}`);
    return { ok: !result.timedOut && !stopped && result.exitCode === 0, output: parts.join("\n") };
  },
});

/**
 * A command's own timeout: what it asked, at most the bash limit. Not the wall time left: a copy of
 * it taken at the start would not follow a deadline a person moves while the command runs (a41d);
 * the run's signal ends the command at the deadline instead.
 */
export function commandTimeoutMs(ctx: Pick<ToolContext, "bashTimeoutMs">, askedSec?: number): number {
  const asked = askedSec ? askedSec * 1000 : ctx.bashTimeoutMs;
  return Math.max(1, Math.min(asked, ctx.bashTimeoutMs));
}

function stopReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason.message : "cancelled";
}
