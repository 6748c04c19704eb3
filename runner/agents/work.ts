// Work agent: its system prompt and the brief it starts each pass with. The step loop that runs its
// tool calls under enforced limits is the orchestrator's (runner/run/session/conversation.ts runPass).
import { fenceBlock } from "../markdown-quote.ts";
import type { SamNode } from "../sam/types.ts";
import type { PrescanPlan } from "./prescan.ts";
import { fillTemplate, promptFile } from "./prompt.ts";

export function workSystem(): string {
  return promptFile("work.md");
}

export interface SkillBlock {
  name: string;
  text: string;
}

export function workBrief(
  node: SamNode,
  parent: SamNode | undefined,
  plan: PrescanPlan,
  skills: SkillBlock[],
): string {
  const parentContext = parent
    ? `## Part of: ${parent.title} (node ${parent.id})\n\n${parent.context?.trim() ?? ""}`.trim()
    : node.context?.trim()
      ? `## Context\n\n${node.context.trim()}`
      : "";
  const skillText = skills.map((s) => `# Skill: ${s.name}\n\n${s.text.trim()}`).join("\n\n");
  return fillTemplate("work.input.md", {
    title: node.title,
    node: node.id,
    todo: node.todo.trim(),
    expectation: node.expectation.trim(),
    parentContext,
    // The planner's words, quoted: what it read (memory, history) was partly the agent's.
    context: plan.context.trim() ? fenceBlock(plan.context.trim(), "markdown") : "(none)",
    plan: plan.plan.trim() ? fenceBlock(plan.plan.trim(), "markdown") : "(none)",
    skills: skillText,
  });
}

export function blockerNudge(count: number): string {
  return fillTemplate("work.blocker.md", { count: String(count) });
}
