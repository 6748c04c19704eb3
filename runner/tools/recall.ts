// recall: the full text of a tool output the runner elided to keep a pass inside the model's
// context window (runner/run/session/context-budget.ts). Offered only to a pass that can compact.
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const recallTool = defineTool({
  name: "recall",
  effect: "read",
  description: new URL("./recall.md", import.meta.url),
  input: z.strictObject({
    id: z.string().min(1).describe("The id the shortened output names (the tool call's id)."),
  }),
  async execute({ id }, ctx) {
    const text = ctx.recall?.(id);
    if (text === undefined)
      return {
        ok: false,
        output: `No shortened tool output has the id ${JSON.stringify(id)}: recall returns only outputs the runner elided in this pass (their placeholder names the id).`,
      };
    return { ok: true, output: text };
  },
});
