// A tool for the context-budget tests: it returns a large output without a sandbox, so a pass's
// history grows as a long build log would. Only the model (scripted, over HTTP) is exercised.
import { z } from "zod";
import type { ToolSet } from "../../../runner/tools/registry.ts";
import { reportDoneTool } from "../../../runner/tools/report-done.ts";
import { defineTool } from "../../../runner/tools/tool.ts";

export const emitTool = defineTool({
  name: "emit",
  effect: "exec",
  description: new URL("./context-budget-emit.md", import.meta.url),
  input: z.strictObject({ chars: z.number().int().min(1), tag: z.string() }),
  async execute({ chars, tag }) {
    const head = `${tag}: `;
    return { ok: true, output: head + "z".repeat(Math.max(0, chars - head.length)) };
  },
});

export function defineToolSet(): ToolSet {
  return new Map([
    [emitTool.name, emitTool],
    [reportDoneTool.name, reportDoneTool],
  ]);
}
