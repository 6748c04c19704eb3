// The make-skill command body: read the runs, draft, validate, write to skills/drafts/.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { EXIT } from "../../exit-codes.ts";
import { homePaths, scifiHome } from "../../paths.ts";
import { loadSkills, skillDirs } from "../../skills/index.ts";
import { type HelperCommandOptions, helperOutput, withHelperSession } from "../session.ts";
import { makeSkill } from "./make-skill.ts";
import { RunNotFound, type RunRecord, readRun, resolveRun } from "./runs.ts";

export type MakeSkillCommandOptions = HelperCommandOptions;

export async function runMakeSkill(refs: string[], options: MakeSkillCommandOptions): Promise<number> {
  const { out, err } = helperOutput(options);
  const home = scifiHome(options.env);
  let runs: RunRecord[];
  try {
    runs = refs.map((ref) => readRun(resolveRun(home, ref)));
  } catch (error) {
    if (!(error instanceof RunNotFound)) throw error;
    err(`scifi make-skill: ${error.message}\n`);
    return EXIT.usage;
  }
  const { skills } = loadSkills(skillDirs(homePaths(home).skills));
  return withHelperSession(
    { home, helper: "make-skill", model: options.model, env: options.env },
    err,
    async (session) => {
      const result = await makeSkill({
        runs,
        model: session.model,
        runId: session.runId,
        skills,
        rank: Number(options.rank ?? "1"),
      });
      session.record("draft.md", result.text);
      if (!result.ok) {
        err(`scifi make-skill: no valid skill after ${result.tries} tries; last problems:\n`);
        for (const d of result.diagnostics) err(`  line ${d.line}: ${d.message}\n`);
        err(`the last draft and the audit tape are in ${session.runDir}\n${session.tapeLine()}`);
        return EXIT.failed;
      }
      const drafts = join(homePaths(home).skills, "drafts");
      const path = join(drafts, `${result.skill.name}.md`);
      if (existsSync(path) && !options.force) {
        err(`scifi make-skill: ${path} already exists; review or remove it, or pass --force\n`);
        return EXIT.usage;
      }
      mkdirSync(drafts, { recursive: true });
      const provenance = `\n<!-- drafted by scifi make-skill from run(s) ${runs.map((r) => r.id).join(", ")}; audit: ${session.runId} -->\n`;
      writeFileSync(path, `${result.text.trimEnd()}\n${provenance}`);
      out(`wrote ${path} (a draft: review it, then move it to ${homePaths(home).skills}/ to use it)\n`);
      out(session.tapeLine());
      return EXIT.ok;
    },
  );
}
