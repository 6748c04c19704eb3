// The one optional model call of `scifi evolve`: the recurring review findings summarised into a
// few lines a prompt could add. Optional (`--model`); without it the prompt proposal lists the
// findings themselves. The call goes through a helper session, so it is on an audit tape like every
// model call (runs/evolve-<time>-<rand>/); the scripted model is labelled as such in the proposal.
import { readFileSync } from "node:fs";
import { replyText } from "../helpers/reply.ts";
import type { HelperSession } from "../helpers/session.ts";
import type { RecurringFinding } from "./stats.ts";

export async function summariseFindings(
  session: HelperSession,
  findings: RecurringFinding[],
): Promise<{ text: string; model: string; scripted: boolean }> {
  const system = readFileSync(new URL("./summarise.md", import.meta.url), "utf8");
  const listing = findings.map((f) => `- (${f.runs.length} runs) ${JSON.stringify(f.text)}`).join("\n");
  const response = await session.model.complete({
    role: "evolve",
    kind: "control",
    rank: 1,
    system,
    messages: [{ role: "user", content: [{ type: "text", text: `Recurring findings:\n${listing}` }] }],
    maxTokens: 1500,
    meta: { runId: session.runId },
  });
  const text = replyText(response).trim();
  if (text === "") throw new Error("the model's summary of the findings was empty");
  return { text, model: response.model, scripted: response.provider === "scripted" };
}
