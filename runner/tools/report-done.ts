// report_done: the work agent claims the task is complete. The claim is not trusted: the runner
// then runs the Expectation's checks itself and the review agent judges the evidence.
import { z } from "zod";
import { defineTool } from "./tool.ts";

export const reportDoneTool = defineTool({
  name: "report_done",
  effect: "control",
  description: new URL("./report-done.md", import.meta.url),
  input: z.strictObject({
    claim: z.string().min(1).describe("One sentence: what is now true that the Expectation asks for."),
    summary: z
      .string()
      .min(1)
      .describe("What you changed and how you verified it (files, commands, results)."),
  }),
  async execute({ claim, summary }) {
    return {
      ok: true,
      output: "Recorded. The runner will now run the checks and the review.",
      signal: { type: "done", claim, summary },
    };
  },
});
