// The SAM gate (runner/sam/gate.ts) as every entry point calls it: with the skill names checked
// against the home's skills library, exactly as `scifi validate` checks them.
import { homePaths } from "../paths.ts";
import { type GateOptions, gateSam } from "../sam/gate.ts";
import type { SamDocument } from "../sam/types.ts";
import { checkSkillNames } from "./check.ts";
import { skillDirs } from "./library.ts";
import { loadSkills } from "./load.ts";
import type { Skill } from "./types.ts";

/**
 * The gate's options: skills named in the SAM must be in the library of the scifi home `from` (its
 * skills and the built-in ones), or in `from` when the caller has loaded the library already.
 */
export function gateOptions(from: string | readonly Skill[]): GateOptions {
  let library = typeof from === "string" ? undefined : from;
  return {
    // Read only for a SAM that parsed (most name no skill, and a refused one needs none).
    extraChecks: (sam, text) => {
      library ??= loadSkills(skillDirs(homePaths(from as string).skills)).skills;
      return checkSkillNames(sam, library, text);
    },
  };
}

/** The SAM file through the gate under `home`; SamRefused (runner/sam/gate.ts) when validate reports an error. */
export function gateSamFile(file: string, home: string): SamDocument {
  return gateSam(file, gateOptions(home));
}
