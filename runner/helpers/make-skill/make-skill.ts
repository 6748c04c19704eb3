// The skill maker: run records -> skill draft -> the skill validator -> repair, at most `maxTries`
// model calls. The draft is for a human to review; it is never loaded as a skill by itself.
import type { Model } from "../../llm/types.ts";
import type { Diagnostic } from "../../sam/types.ts";
import { parseSkillText, renderSkillIndex, type Skill, skillIndex } from "../../skills/index.ts";
import { draftWithRepairs } from "../draft-loop.ts";
import { renderPrompt } from "../prompt.ts";
import { type RunRecord, renderRuns } from "./runs.ts";

export interface MakeSkillOptions {
  runs: readonly RunRecord[];
  model: Model;
  runId: string;
  /** Existing skills: shown to the model, and their names may not be reused. */
  skills: readonly Skill[];
  maxTries?: number;
  rank?: number;
}

export type MakeSkillResult =
  | { ok: true; skill: Skill; text: string; tries: number }
  | { ok: false; text: string; tries: number; diagnostics: Diagnostic[] };

export const MAKE_SKILL_TRIES = 3;

export async function makeSkill(options: MakeSkillOptions): Promise<MakeSkillResult> {
  const allSkills = skillIndex(options.skills, new Set(["network", "jobs", "gpu"]));
  const system = renderPrompt(new URL("./make-skill.md", import.meta.url), {
    skill_index: renderSkillIndex(allSkills),
    runs: renderRuns(options.runs),
  });
  const maxTries = options.maxTries ?? MAKE_SKILL_TRIES;
  let tries = 0;
  let last: { text: string; diagnostics: Diagnostic[] } = { text: "", diagnostics: [] };
  const accepted = await draftWithRepairs<{ skill: Skill; text: string; tries: number }>({
    model: options.model,
    role: "make_skill",
    runId: options.runId,
    rank: options.rank ?? 1,
    system,
    ask: `Draft a skill from the ${options.runs.length} run(s) above.`,
    maxTokens: 6000,
    maxTries,
    check(text) {
      tries++;
      const parsed = parseSkillText(text, "<draft>");
      const diagnostics = parsed.ok ? nameClash(parsed.skill, options.skills) : parsed.diagnostics;
      if (parsed.ok && diagnostics.length === 0) return { done: { skill: parsed.skill, text, tries } };
      last = { text, diagnostics };
      const list = diagnostics.map((d) => `- line ${d.line}: ${d.message}`).join("\n");
      return {
        reply: text,
        repair: renderPrompt(new URL("./repair.md", import.meta.url), { diagnostics: list }),
      };
    },
  });
  if (accepted) return { ok: true, ...accepted };
  return { ok: false, text: last.text, tries: maxTries, diagnostics: last.diagnostics };
}

function nameClash(draft: Skill, skills: readonly Skill[]): Diagnostic[] {
  const existing = skills.find((s) => s.name === draft.name);
  if (!existing) return [];
  return [
    {
      file: "<draft>",
      line: 2,
      column: 1,
      severity: "error",
      message: `a skill named '${draft.name}' already exists (${existing.file}); choose a new name`,
    },
  ];
}
