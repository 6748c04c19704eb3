// The tool sets each role gets, and dispatch by name. An unknown tool name from the model is
// answered with an error text it can read, never a crash.
import type { ToolSpec } from "../llm/types.ts";
import { bashTool } from "./bash.ts";
import { editFileTool } from "./edit-file.ts";
import { globTool } from "./glob.ts";
import { grepTool } from "./grep.ts";
import { readFileTool } from "./read-file.ts";
import { reportBlockerTool } from "./report-blocker.ts";
import { reportDoneTool } from "./report-done.ts";
import type { Tool, ToolContext, ToolOutcome } from "./tool.ts";
import { writeFileTool } from "./write-file.ts";

export type ToolSet = ReadonlyMap<string, Tool>;

function toolSet(tools: Tool[]): ToolSet {
  return new Map(tools.map((tool) => [tool.name, tool]));
}

/** The work agent: acts in the sandbox and ends its pass with report_done or report_blocker. */
export const workTools: ToolSet = toolSet([
  bashTool,
  readFileTool,
  writeFileTool,
  editFileTool,
  globTool,
  grepTool,
  reportDoneTool,
  reportBlockerTool,
]);

/**
 * The review agent: read-only tools. Its bash runs in a separate sandbox that sees
 * the task folder read-only (runner/run/session/sandboxes.ts phaseSpec), so nothing it runs can change the work.
 */
export const reviewTools: ToolSet = toolSet([bashTool, readFileTool, globTool, grepTool]);
/** The tracer's: reading only, nothing that executes (the agent's code never runs where it is judged). */
export const tracerTools: ToolSet = toolSet([readFileTool, globTool, grepTool]);

export function toolSpecs(tools: ToolSet): ToolSpec[] {
  return [...tools.values()].map((tool) => tool.spec);
}

export async function runTool(
  tools: ToolSet,
  name: string,
  input: unknown,
  ctx: ToolContext,
): Promise<ToolOutcome> {
  const tool = tools.get(name);
  if (!tool) {
    return { ok: false, output: `Unknown tool '${name}'. Available tools: ${[...tools.keys()].join(", ")}.` };
  }
  return tool.run(input, ctx);
}
