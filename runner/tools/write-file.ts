// write_file: create or overwrite a file in the task folder.
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const writeFileTool = defineTool({
  name: "write_file",
  effect: "write",
  description: new URL("./write-file.md", import.meta.url),
  input: z.strictObject({
    path: z.string().min(1).describe("File path, absolute under /task or relative to it."),
    content: z.string().describe("The whole new content of the file."),
  }),
  async execute({ path, content }, ctx) {
    await ctx.sandbox.writeFile(path, content);
    const lines = content === "" ? 0 : content.split("\n").length - (content.endsWith("\n") ? 1 : 0);
    return { ok: true, output: `Wrote ${path}: ${Buffer.byteLength(content)} bytes, ${lines} lines.` };
  },
});
