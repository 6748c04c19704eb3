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
    // The run's signal (a wall-time deadline, a cancel) kills the command in the sandbox too.
    const result = await ctx.sandbox.exec(command, {
      timeoutMs,
      maxOutputBytes: COLLECT_BYTES,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    const parts = [`exit code: ${result.timedOut ? "killed (timeout)" : result.exitCode}`];
    if (result.truncated)
      parts.push(`Output beyond ${COLLECT_BYTES / 1024 / 1024} MiB per stream was dropped.`);
    if (result.timedOut) parts.push(`The command ran longer than ${timeoutMs / 1000} s and was killed.`);
    if (result.stdout) parts.push(`stdout:\n${result.stdout}`);
    if (result.stderr) parts.push(`stderr:\n${result.stderr}`);
    return { ok: !result.timedOut && result.exitCode === 0, output: parts.join("\n") };
  },
});

/** A command's timeout: what it asked, at most the bash limit and the wall time the run has left. */
export function commandTimeoutMs(
  ctx: Pick<ToolContext, "bashTimeoutMs" | "timeLeftMs">,
  askedSec?: number,
): number {
  const asked = askedSec ? askedSec * 1000 : ctx.bashTimeoutMs;
  return Math.max(1, Math.min(asked, ctx.bashTimeoutMs, ctx.timeLeftMs?.() ?? Number.POSITIVE_INFINITY));
}
