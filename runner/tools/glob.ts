// glob: list files under a folder matching a glob pattern. The listing comes from `find` in the
// sandbox (so it sees exactly what the agent sees); matching happens on the host with Node's glob.
import { matchesGlob, posix } from "node:path";
import { z } from "zod";
import { defineTool } from "./tool.ts";

const MAX_RESULTS = 500;

export const globTool = defineTool({
  name: "glob",
  effect: "read",
  description: new URL("./glob.md", import.meta.url),
  input: z.strictObject({
    pattern: z.string().min(1).describe("Glob such as `**/*.v` or `src/*.f90`, relative to `path`."),
    path: z.string().optional().describe("Folder to search (default /task)."),
  }),
  async execute({ pattern, path = "/task" }, ctx) {
    const root = posix.resolve("/task", path);
    const listing = await ctx.sandbox.exec(["find", root, "-type", "f", "-not", "-path", "*/.git/*"], {
      timeoutMs: 30_000,
    });
    if (listing.exitCode !== 0 && listing.stdout === "") {
      return {
        ok: false,
        output: `Cannot list ${root}: ${listing.stderr.trim() || `exit ${listing.exitCode}`}`,
      };
    }
    const matches = listing.stdout
      .split("\n")
      .filter((file) => file !== "")
      .map((file) => posix.relative(root, file))
      .filter((rel) => matchesGlob(rel, pattern))
      .sort();
    if (matches.length === 0) return { ok: true, output: `No files under ${root} match ${pattern}.` };
    const shown = matches.slice(0, MAX_RESULTS);
    const more = matches.length > MAX_RESULTS ? `\n(${matches.length - MAX_RESULTS} more not shown)` : "";
    return { ok: true, output: `${matches.length} file(s) under ${root}:\n${shown.join("\n")}${more}` };
  },
});
