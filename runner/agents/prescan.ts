// Pre-scan (control agent): reads the SAM tree, task memory, the history tail, group memory and the
// skill index; returns a validated plan for the next work pass.
import { z } from "zod";
import { estimateTokens } from "../llm/context-window.ts";
import type { Model, ModelRequest, ModelResponse } from "../llm/types.ts";
import { fenceBlock } from "../markdown-quote.ts";
import type { RecordedPlan } from "../run-folder/state.ts";
import type { SamNode } from "../sam/types.ts";
import { jsonSchemaOf } from "../tools/tool.ts";
import { budgetFor, fitMemory, HISTORY_SHARE, newestLines, roomFor } from "./brief-budget.ts";
import { fillTemplate, promptFile } from "./prompt.ts";
import type { Brief, RefusedRetry } from "./refused-brief.ts";
import { structuredCall } from "./structured.ts";
import { readyNodes, renderTree } from "./tree.ts";

export const PrescanPlan = z.object({
  node: z.string().min(1).describe("Id of the ready node to work on next."),
  rank: z.number().int().min(1).describe("Work model rank for this pass."),
  skills: z.array(z.string()).describe("Skills whose full text the work agent gets."),
  context: z.string().describe("Facts the work agent needs beyond the node text."),
  plan: z.string().describe("Ordered steps for the work agent."),
  direction: z.string().min(1).describe("One line naming the approach."),
}) satisfies z.ZodType<RecordedPlan>;
export type PrescanPlan = z.infer<typeof PrescanPlan>;

export interface PrescanInput {
  root: SamNode;
  complete: ReadonlySet<string>;
  iteration: number;
  rank: { min: number; max: number; suggested: number };
  controlRank: number;
  /**
   * The task memory file's text, entry marks and all (the prompt shows it as readMemory does, its
   * older entries shortened to titles when it passes the model's budget); declared as injected.
   */
  taskMemory: { text: string; ref: string; sha256: string };
  /** The group memory view (runner/memory/view.ts); undefined for a SAM without a group. */
  groupMemory: { group: string; text: string; ref: string; sha256: string } | undefined;
  /** The global memory view: only suggestions a person accepted (`scifi memory accept`). */
  globalMemory?: { text: string; ref: string; sha256: string } | undefined;
  history: string;
  skillIndex: string;
  skillNames: readonly string[];
  /** The skills the SAM lists: the work agent gets them whatever the plan says. */
  grantedSkills?: readonly string[];
  meta: ModelRequest["meta"];
}

export async function runPrescan(
  model: Model,
  input: PrescanInput,
  onResponse?: (response: ModelResponse) => void,
  /** Told when the provider refused the brief as too long and a shorter one is sent (the history records it). */
  onRetried?: (retry: RefusedRetry) => void,
): Promise<PrescanPlan> {
  const ready = readyNodes(input.root, input.complete).map((node) => node.id);
  const system = promptFile("prescan.md");
  // Built for a budget: the model's, or a lower one after the provider refused the request as too long.
  const build = (budget: number | undefined): Brief => {
    // The history tail (check output tails in it) within its share, newest events kept.
    const history = newestLines(input.history, budget && Math.floor(HISTORY_SHARE * budget));
    const brief = (taskMemory: string) =>
      fillTemplate("prescan.input.md", {
        tree: renderTree(input.root, input.complete),
        ready: ready.join(", "),
        rankMin: String(input.rank.min),
        rankMax: String(input.rank.max),
        rankSuggested: String(input.rank.suggested),
        iteration: String(input.iteration),
        taskMemory: taskMemory.trim() || "(empty: first iteration)",
        // One JSON event a line, quoted whole: no string in an event can start a line of its own.
        history: history.text
          ? `${fenceBlock(history.text, "jsonl")}${history.note ? `\n\n${history.note}` : ""}`
          : "(empty)",
        group: input.groupMemory?.group ?? "no group",
        groupMemory: input.groupMemory
          ? input.groupMemory.text.trim() || "(empty)"
          : "(none: the task has no group)",
        globalMemory: input.globalMemory?.text.trim() || "(empty)",
        skills: input.skillIndex,
        grantedSkills: input.grantedSkills?.length ? input.grantedSkills.join(", ") : "(none)",
      });
    // Task memory grows by an entry per failed iteration: it gets what the rest of the brief leaves.
    const room = roomFor(budget, {
      system,
      messages: [{ role: "user", content: [{ type: "text", text: brief("") }] }],
      jsonSchema: { name: "prescan_plan", schema: jsonSchemaOf(PrescanPlan) },
    });
    const memory = fitMemory(input.taskMemory.text, room);
    return {
      messages: [{ role: "user", content: [{ type: "text", text: brief(memory.text) }] }],
      parts: [
        { name: "task memory", tokens: estimateTokens(memory.text) },
        { name: "the history tail", tokens: estimateTokens(history.text) },
        { name: "group memory", tokens: estimateTokens(input.groupMemory?.text ?? "") },
        { name: "global memory", tokens: estimateTokens(input.globalMemory?.text ?? "") },
        { name: "the skill index", tokens: estimateTokens(input.skillIndex) },
      ],
    };
  };
  const first = build(budgetFor(model, "control", input.controlRank));
  const injected: NonNullable<ModelRequest["injected"]> = [];
  if (input.taskMemory.text.trim()) {
    injected.push({ kind: "memory", ref: input.taskMemory.ref, sha256: input.taskMemory.sha256 });
  }
  if (input.groupMemory?.text.trim()) {
    injected.push({ kind: "memory", ref: input.groupMemory.ref, sha256: input.groupMemory.sha256 });
  }
  if (input.globalMemory?.text.trim()) {
    injected.push({ kind: "memory", ref: input.globalMemory.ref, sha256: input.globalMemory.sha256 });
  }
  // The plan must name a ready node and known skills; checked as part of validation so a bad
  // choice gets the same one retry with the reason.
  const schema = PrescanPlan.superRefine((plan, ctx) => {
    if (!ready.includes(plan.node)) {
      ctx.addIssue({
        code: "custom",
        path: ["node"],
        message: `'${plan.node}' is not ready; choose one of ${ready.join(", ")}`,
      });
    }
    for (const skill of plan.skills) {
      if (!input.skillNames.includes(skill)) {
        ctx.addIssue({
          code: "custom",
          path: ["skills"],
          message: `unknown skill '${skill}'; available: ${input.skillNames.join(", ") || "(none)"}`,
        });
      }
    }
  });
  const { value } = await structuredCall(
    model,
    {
      role: "prescan",
      kind: "control",
      rank: input.controlRank,
      system,
      messages: first.messages,
      injected,
      meta: input.meta,
    },
    schema as unknown as typeof PrescanPlan,
    "prescan_plan",
    onResponse,
    { parts: first.parts, rebuild: build, ...(onRetried ? { onRetried } : {}) },
  );
  return { ...value, rank: Math.min(input.rank.max, Math.max(input.rank.min, value.rank)) };
}
