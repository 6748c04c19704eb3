// Skills: Markdown files with front matter that carry know-how the agent could not find reliably on
// its own (how to run ROOT in batch mode, how to submit a SLURM job here). The pre-scan sees only
// the index (name + description); the full text goes into a prompt only for selected skills, and
// every such injection is recorded on the audit tape by name and SHA-256.

/** Resources a skill may depend on. A skill is offered only when the SAM grants all it requires. */
export const GRANTS = ["network", "jobs", "gpu"] as const;
export type Grant = (typeof GRANTS)[number];

export interface Skill {
  /** Unique name; equals the file name without `.md`. */
  name: string;
  /** One or two sentences: what the skill helps with (shown in the index). */
  description: string;
  /** When an agent should pick this skill (shown in the index). */
  whenToUse: string;
  requires: Grant[];
  /** Absolute path of the skill file. */
  file: string;
  /** The Markdown body after the front matter. */
  body: string;
  /** The whole file exactly as read (front matter included): what is injected into prompts. */
  text: string;
  /** SHA-256 (hex) of `text`. */
  sha256: string;
  /** 1-based line where the body starts, for diagnostics about the body. */
  bodyLine: number;
  /** A domain pack's critique context (vocabulary, rules, finding types): the critique reads it. */
  critiqueContext?: { file: string; text: string; sha256: string };
  /**
   * A domain pack's helper registry: the folder is mounted read-only at `/opt/scifi/helpers/<name>`
   * for the run; its `registry.md` (names, purpose, inputs, outputs, import path) joins the skill text.
   */
  helpers?: { dir: string; registry: string };
}

/** Where a skill's helper folder is mounted in every sandbox of a run that offers the skill. */
export function helpersMount(name: string): string {
  return `/opt/scifi/helpers/${name}`;
}

/** What the pre-scan sees of a skill: never the full text. */
export interface SkillIndexEntry {
  name: string;
  description: string;
  whenToUse: string;
}

/** The full text of one skill, ready to inject, with its hash for the audit tape. */
export interface SkillText {
  name: string;
  text: string;
  sha256: string;
  /** For `ModelRequest.injected`. */
  injected: { kind: "skill"; ref: string; sha256: string };
}
