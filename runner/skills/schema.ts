// The skill front-matter schema. Keys are snake_case in the file (as users write YAML).
import { z } from "zod";
import { GRANTS } from "./types.ts";

export const SKILL_NAME = /^[a-z][a-z0-9-]*$/;

/** A domain pack file or folder: relative, no `..`, no leading dot segments. */
const PACK_PATH = /^(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9_][A-Za-z0-9_./-]*$/;

export const skillFrontMatter = z
  .object({
    name: z
      .string()
      .regex(
        SKILL_NAME,
        "must be lower-case letters, digits and '-', starting with a letter (e.g. python-data)",
      ),
    description: z
      .string()
      .trim()
      .min(10, "must say in a sentence what the skill helps with")
      .max(300, "must stay under 300 characters: it is shown in the index for every run"),
    when_to_use: z.string().trim().min(10, "must say when an agent should pick this skill"),
    requires: z.array(z.enum(GRANTS, { error: `must be one of: ${GRANTS.join(", ")}` })).default([]),
    // A domain pack (docs/critique.md): paths relative to the skill file's folder, inside it.
    critique_context: z
      .string()
      .regex(PACK_PATH, "must be a relative path inside the skills folder (e.g. lhco/critique.md)")
      .optional(),
    helpers: z
      .string()
      .regex(PACK_PATH, "must be a relative folder inside the skills folder (e.g. lhco/helpers)")
      .optional(),
  })
  .strict();

export type SkillFrontMatter = z.infer<typeof skillFrontMatter>;

export const SKILL_KEYS = Object.keys(skillFrontMatter.shape);
