// Public surface of the skills module.
export { checkSkillNames } from "./check.ts";
export {
  BUILTIN_SKILLS_DIR,
  grantsOf,
  missingGrants,
  renderSkillIndex,
  skillDirs,
  skillIndex,
  skillText,
  UnknownSkill,
} from "./library.ts";
export { loadSkills, parseSkillText } from "./load.ts";
export { GRANTS, type Grant, type Skill, type SkillIndexEntry, type SkillText } from "./types.ts";
