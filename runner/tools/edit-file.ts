// edit_file: replace one exact, unique occurrence of a text, and show the change.
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const editFileTool = defineTool({
  name: "edit_file",
  effect: "write",
  description: new URL("./edit-file.md", import.meta.url),
  input: z.strictObject({
    path: z.string().min(1).describe("File path, absolute under /task or relative to it."),
    old_text: z.string().min(1).describe("Exact text to replace; must occur exactly once in the file."),
    new_text: z.string().describe("Replacement text."),
  }),
  async execute({ path, old_text, new_text }, ctx) {
    const before = (await ctx.sandbox.readFile(path)).toString("utf8");
    const edit = applyEdit(before, old_text, new_text);
    if (!edit.ok) return { ok: false, output: `${path}: ${edit.error}` };
    await ctx.sandbox.writeFile(path, edit.after);
    return { ok: true, output: `Edited ${path}:\n${edit.report}` };
  },
});

export type EditResult = { ok: true; after: string; report: string } | { ok: false; error: string };

/** Pure core of edit_file, so the matching rules are unit-testable without a sandbox. */
export function applyEdit(before: string, oldText: string, newText: string): EditResult {
  const first = before.indexOf(oldText);
  if (first < 0) {
    return {
      ok: false,
      error: "old_text was not found. Read the file again and copy the text exactly, whitespace included.",
    };
  }
  const count = countOccurrences(before, oldText);
  if (count > 1) {
    return {
      ok: false,
      error: `old_text occurs ${count} times; include more surrounding lines so it is unique.`,
    };
  }
  if (oldText === newText)
    return { ok: false, error: "old_text and new_text are identical; nothing to change." };
  const after = before.slice(0, first) + newText + before.slice(first + oldText.length);
  const line = before.slice(0, first).split("\n").length;
  const removed = oldText.split("\n").map((l) => `- ${l}`);
  const added = newText.split("\n").map((l) => `+ ${l}`);
  return { ok: true, after, report: `@@ line ${line} @@\n${[...removed, ...added].join("\n")}` };
}

function countOccurrences(text: string, part: string): number {
  let count = 0;
  for (let at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length)) count++;
  return count;
}
