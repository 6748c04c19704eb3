// scifi make-skill with a SCRIPTED model through the real gateway: reads a run's memory and
// history, repairs an invalid draft with the skill validator's messages, writes to skills/drafts/.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runMakeSkill } from "../../runner/helpers/make-skill/command.ts";
import { loadSkills, parseSkillText } from "../../runner/skills/index.ts";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "helpers", "make-skill");

function home() {
  const h = mkdtempSync(join(tmpdir(), "scifi-make-skill-"));
  mkdirSync(join(h, "runs"));
  cpSync(join(FIXTURES, "run-fortran-1"), join(h, "runs", "run-fortran-1"), { recursive: true });
  return h;
}

async function makeSkill(h: string, script: string, runs = ["run-fortran-1"]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runMakeSkill(runs, {
    model: `scripted:${join(FIXTURES, script)}`,
    env: { ...process.env, SCIFI_HOME: h },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  return { code, out: out.join(""), err: err.join("") };
}

describe("scifi make-skill (scripted model)", () => {
  it("drafts a valid skill from a run's memory and history into skills/drafts/", async () => {
    const h = home();
    const r = await makeSkill(h, "repair.yaml");
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const path = join(h, "skills", "drafts", "fortran-module-order.md");
    expect(r.out).toContain(`wrote ${path}`);
    const parsed = parseSkillText(readFileSync(path, "utf8"), path);
    expect(parsed.ok).toBe(true);
    expect(readFileSync(path, "utf8")).toContain("drafted by scifi make-skill from run(s) run-fortran-1");
    // Drafts are never loaded as skills.
    expect(loadSkills([join(h, "skills")]).skills).toEqual([]);
  });

  it("refuses an existing skill's name three times, then exits 1 without writing", async () => {
    const h = home();
    const r = await makeSkill(h, "clash.yaml");
    expect(r.code).toBe(1);
    expect(r.err).toContain("a skill named 'gfortran' already exists");
    expect(existsSync(join(h, "skills", "drafts"))).toBe(false);
  });

  it("names a run that does not exist and lists the recent ones", async () => {
    const h = home();
    const r = await makeSkill(h, "repair.yaml", ["run-nope"]);
    expect(r.code).toBe(2);
    expect(r.err).toContain("no run 'run-nope'");
    expect(r.err).toContain("recent runs: run-fortran-1");
  });
});
