// read_file: a window of a text file with 1-based line numbers.
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const readFileTool = defineTool({
  name: "read_file",
  effect: "read",
  description: new URL("./read-file.md", import.meta.url),
  input: z.strictObject({
    path: z.string().min(1).describe("File path, absolute or relative to /task."),
    offset: z
      .number()
      .int()
      .min(1)
      .max(100_000_000)
      .optional()
      .describe("First line to show (1-based, default 1)."),
    limit: z.number().int().min(1).max(5000).optional().describe("Number of lines to show (default 400)."),
  }),
  async execute({ path, offset = 1, limit = 400 }, ctx) {
    const text = (await ctx.sandbox.readFile(path)).toString("utf8");
    return { ok: true, output: numberLines(text, offset, limit) };
  },
});

export function numberLines(text: string, offset: number, limit: number): string {
  const lines = text.split("\n");
  if (lines.length > 1 && lines.at(-1) === "") lines.pop();
  if (offset > lines.length) return `(the file has ${lines.length} lines; offset ${offset} is past the end)`;
  const shown = lines.slice(offset - 1, offset - 1 + limit);
  const width = String(offset + shown.length - 1).length;
  const body = shown.map((line, i) => `${String(offset + i).padStart(width)}\t${line}`).join("\n");
  const end = offset + shown.length - 1;
  const more =
    end < lines.length ? `\n(lines ${offset}-${end} of ${lines.length}; use offset ${end + 1} for more)` : "";
  return body + more;
}
