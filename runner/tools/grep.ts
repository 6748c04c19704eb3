// grep: search file contents with an extended regular expression, run as argv in the sandbox
// (no shell, so the pattern cannot inject commands).
import { posix } from "node:path";
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const grepTool = defineTool({
  name: "grep",
  effect: "read",
  description: new URL("./grep.md", import.meta.url),
  input: z.strictObject({
    pattern: z.string().min(1).describe("Extended regular expression (grep -E)."),
    path: z.string().optional().describe("File or folder to search (default /task)."),
    include: z.string().optional().describe("Only files whose name matches this glob, e.g. `*.v`."),
    ignore_case: z.boolean().optional().describe("Match case-insensitively."),
  }),
  async execute({ pattern, path = "/task", include, ignore_case }, ctx) {
    const target = posix.resolve("/task", path);
    const argv = ["grep", "-rnE", "--exclude-dir=.git", "-I"];
    if (ignore_case) argv.push("-i");
    if (include) argv.push(`--include=${include}`);
    argv.push("-e", pattern, "--", target);
    const result = await ctx.sandbox.exec(argv, { timeoutMs: 30_000 });
    if (result.exitCode === 1) return { ok: true, output: `No matches for /${pattern}/ in ${target}.` };
    if (result.exitCode !== 0) return { ok: false, output: `grep failed: ${result.stderr.trim()}` };
    return { ok: true, output: result.stdout };
  },
});
