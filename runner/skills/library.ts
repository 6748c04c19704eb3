// The skill index the pre-scan sees, requirement filtering, and full texts for injection.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SamMetadata } from "../sam/types.ts";
import { sha256 } from "../sha256.ts";
import {
  GRANTS,
  type Grant,
  helpersMount,
  type Skill,
  type SkillIndexEntry,
  type SkillText,
} from "./types.ts";

/** The skills shipped with scifi (`<repo>/skills`). */
export const BUILTIN_SKILLS_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "skills");

/**
 * Skill folders in precedence order: the home's `skills/` first (site skills), then the shipped ones.
 * When both are the same folder it is listed once.
 */
export function skillDirs(homeSkillsDir: string): string[] {
  return homeSkillsDir === BUILTIN_SKILLS_DIR ? [homeSkillsDir] : [homeSkillsDir, BUILTIN_SKILLS_DIR];
}

/** The grants a parsed SAM holds, in skill-requirement terms. */
export function grantsOf(metadata: Pick<SamMetadata, "network" | "gpu" | "jobs">): Set<Grant> {
  const grants = new Set<Grant>();
  if (metadata.network) grants.add("network");
  if (metadata.gpu > 0) grants.add("gpu");
  if (metadata.jobs !== undefined) grants.add("jobs");
  return grants;
}

/** Requirements of the skill that the grants do not cover (empty when the skill may be offered). */
export function missingGrants(skill: Skill, grants: ReadonlySet<Grant>): Grant[] {
  return skill.requires.filter((g) => !grants.has(g));
}

/** Names, descriptions and when-to-use of the skills whose requirements are all granted, by name. */
export function skillIndex(skills: readonly Skill[], grants: ReadonlySet<Grant>): SkillIndexEntry[] {
  return skills
    .filter((s) => missingGrants(s, grants).length === 0)
    .map((s) => ({ name: s.name, description: s.description, whenToUse: s.whenToUse }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The index as a Markdown list, as prompts show it. */
export function renderSkillIndex(entries: readonly SkillIndexEntry[]): string {
  if (entries.length === 0) return "(no skills available for this task)";
  return entries.map((e) => `- **${e.name}**: ${e.description} When to use: ${e.whenToUse}`).join("\n");
}

export class UnknownSkill extends Error {
  override name = "UnknownSkill";
}

/** The full text of a skill with its hash, for prompts and the audit tape. */
export function skillText(skills: readonly Skill[], name: string): SkillText {
  const skill = skills.find((s) => s.name === name);
  if (!skill) {
    const names = skills.map((s) => s.name).join(", ") || "(none)";
    throw new UnknownSkill(`no skill named '${name}'; available: ${names}`);
  }
  // A domain pack's helper registry is offered with the skill: the work agent reads what it may import.
  const text = skill.helpers
    ? `${skill.text.trimEnd()}\n\n## Helper registry (mounted read-only at ${helpersMount(skill.name)})\n\n${skill.helpers.registry.trim()}\n`
    : skill.text;
  const hash = skill.helpers ? sha256(text) : skill.sha256;
  return {
    name: skill.name,
    text,
    sha256: hash,
    injected: { kind: "skill", ref: `skill:${skill.name}`, sha256: hash },
  };
}

export { GRANTS };
