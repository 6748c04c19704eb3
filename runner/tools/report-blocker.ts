// report_blocker: the work agent cannot continue without a human (missing data, access, a
// contradiction in the task). Ends the run as blocked.
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const reportBlockerTool = defineTool({
  name: "report_blocker",
  effect: "control",
  description: new URL("./report-blocker.md", import.meta.url),
  input: z.strictObject({
    reason: z.string().min(1).describe("What stops you, with the evidence (commands and errors)."),
    needs: z.string().min(1).describe("What a human must do or decide so the task can continue."),
  }),
  async execute({ reason, needs }) {
    return {
      ok: true,
      output: "Recorded. The run stops and waits for a human.",
      signal: { type: "blocker", reason, needs },
    };
  },
});
