// Skill files: validation with file:line errors, the index the pre-scan sees, requirement
// filtering, full text with its hash, and the `scifi validate` hook for skill names.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SamMetadata } from "../../runner/sam/types.ts";
import { shellBlocks } from "../../runner/skills/blocks.ts";
import {
  BUILTIN_SKILLS_DIR,
  checkSkillNames,
  grantsOf,
  loadSkills,
  parseSkillText,
  renderSkillIndex,
  type Skill,
  skillIndex,
  skillText,
} from "../../runner/skills/index.ts";

const skill = (front: string, body = "# Body\n\nText.\n") => `---\n${front}\n---\n${body}`;
const GOOD = skill(
  "name: demo\ndescription: Demonstrates the skill format.\nwhen_to_use: Whenever a test needs it.\nrequires: [network]",
);

function parsed(text: string, file = "/x/demo.md"): Skill {
  const result = parseSkillText(text, file);
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  return result.skill;
}

function errors(text: string, file = "/x/demo.md") {
  const result = parseSkillText(text, file);
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.diagnostics;
}

describe("skill validation", () => {
  it("accepts a well-formed skill and hashes the whole file", () => {
    const s = parsed(GOOD);
    expect(s).toMatchObject({ name: "demo", requires: ["network"], whenToUse: "Whenever a test needs it." });
    expect(s.sha256).toBe(createHash("sha256").update(GOOD).digest("hex"));
    expect(s.bodyLine).toBe(7);
  });

  it("points at the line of an unknown key and suggests the right one", () => {
    const text = skill(
      "name: demo\ndescription: Demonstrates the skill format.\nwhen_to_us: typo here, sorry.",
    );
    const all = errors(text);
    const d = all.find((x) => x.message.startsWith("unknown key"));
    const rest = all.filter((x) => x !== d);
    expect(d).toMatchObject({ file: "/x/demo.md", line: 4, severity: "error" });
    expect(d?.message).toContain("unknown key 'when_to_us' (did you mean 'when_to_use'?)");
    expect(rest.some((r) => r.message === "missing required key 'when_to_use'")).toBe(true);
  });

  it("rejects an unknown grant with a suggestion", () => {
    const text = skill(
      "name: demo\ndescription: Demonstrates the skill format.\nwhen_to_use: Always, really.\nrequires: [netwrk]",
    );
    const [d] = errors(text);
    expect(d).toMatchObject({ line: 5 });
    expect(d?.message).toContain("unknown grant 'netwrk' (did you mean 'network'?)");
  });

  it("requires front matter, a body, and a name equal to the file name", () => {
    expect(errors("# no front matter\n")[0]?.message).toContain("starts with YAML front matter");
    expect(errors(GOOD.replace("Text.", "").replace("# Body", ""))[0]?.message).toContain("no body");
    expect(errors(GOOD, "/x/other.md")[0]?.message).toContain("must match the file name 'other.md'");
  });

  it("reports broken YAML at its line", () => {
    const [d] = errors(skill("name: demo\ndescription: [unclosed"));
    expect(d?.message).toContain("not valid YAML");
    expect(d?.line).toBeGreaterThanOrEqual(3);
  });

  it("loads folders in order, skips README and drafts, and reports duplicate names", () => {
    const a = mkdtempSync(join(tmpdir(), "skills-a-"));
    const b = mkdtempSync(join(tmpdir(), "skills-b-"));
    writeFileSync(join(a, "demo.md"), GOOD);
    writeFileSync(join(a, "README.md"), "# not a skill\n");
    mkdirSync(join(a, "drafts"));
    writeFileSync(join(a, "drafts", "half.md"), "not valid at all");
    writeFileSync(join(b, "demo.md"), GOOD);
    const { skills, diagnostics } = loadSkills([a, b, join(a, "missing")]);
    expect(skills.map((s) => s.name)).toEqual(["demo"]);
    expect(diagnostics).toHaveLength(1);
    expect(diagnostics[0]?.message).toContain(`already defined in ${join(a, "demo.md")}`);
  });
});

describe("shipped skills", () => {
  const { skills, diagnostics } = loadSkills([BUILTIN_SKILLS_DIR]);

  it("all validate", () => {
    expect(diagnostics).toEqual([]);
    for (const name of ["common-env", "python-data", "gfortran", "verilator", "root"]) {
      expect(skills.map((s) => s.name)).toContain(name);
    }
  });

  it("each carries runnable shell blocks, and ROOT's own commands are marked root-only", () => {
    for (const s of skills.filter((s) => s.name !== "slurm")) {
      expect(shellBlocks(s).filter((b) => b.tags.length === 0).length, s.name).toBeGreaterThan(0);
    }
    const root = skills.find((s) => s.name === "root");
    expect(root?.body).toContain("ROOT is not installed in this image");
    if (!root) throw new Error("root skill missing");
    const rootOnly = shellBlocks(root).filter((b) => b.tags.includes("root-only"));
    expect(rootOnly.map((b) => b.script).join("\n")).toContain("root -l -b -q");
  });
});

describe("index and requirement filtering", () => {
  const plain = parsed(GOOD.replace("requires: [network]", "requires: []"), "/x/demo.md");
  const net = parsed(GOOD.replace("name: demo", "name: netty"), "/x/netty.md");
  const jobs = parsed(
    GOOD.replace("name: demo", "name: batch").replace("[network]", "[jobs, gpu]"),
    "/x/batch.md",
  );
  const all = [plain, net, jobs];
  const meta = (m: Partial<SamMetadata>) => ({ network: false, gpu: 0, ...m });

  it("offers only skills whose requirements are all granted, names and descriptions only", () => {
    expect(skillIndex(all, grantsOf(meta({}))).map((e) => e.name)).toEqual(["demo"]);
    expect(skillIndex(all, grantsOf(meta({ network: true }))).map((e) => e.name)).toEqual(["demo", "netty"]);
    expect(skillIndex(all, grantsOf(meta({ jobs: "slurm" }))).map((e) => e.name)).toEqual(["demo"]);
    const index = skillIndex(all, grantsOf(meta({ jobs: "slurm", gpu: 1, network: true })));
    expect(index.map((e) => e.name)).toEqual(["batch", "demo", "netty"]);
    expect(Object.keys(index[0] ?? {}).sort()).toEqual(["description", "name", "whenToUse"]);
    expect(renderSkillIndex(index)).not.toContain("# Body");
  });

  it("gives the full text with the hash to record on the tape, and names the valid skills otherwise", () => {
    const t = skillText(all, "netty");
    expect(t.text).toBe(net.text);
    expect(t.injected).toEqual({ kind: "skill", ref: "skill:netty", sha256: net.sha256 });
    expect(() => skillText(all, "nope")).toThrow("no skill named 'nope'; available: demo, netty, batch");
  });
});

describe("checkSkillNames (validate hook)", () => {
  const skills = loadSkills([BUILTIN_SKILLS_DIR]).skills;
  const samText = "---\nname: t\nskills:\n  - python-data\n  - verilatr\n  - slurm\n---\n# T\n";
  const sam = (names: string[], extra: Partial<SamMetadata> = {}) => ({
    file: "/tasks/t.md",
    metadata: {
      name: "t",
      network: false,
      gpu: 0,
      mounts: [],
      skills: names,
      checkAssets: [],
      subtasks: [],
      ...extra,
    },
  });

  it("flags an unknown skill at its line with a suggestion", () => {
    const ds = checkSkillNames(sam(["python-data", "verilatr"]), skills, samText);
    expect(ds).toHaveLength(1);
    expect(ds[0]).toMatchObject({ file: "/tasks/t.md", line: 5, column: 5, severity: "error" });
    expect(ds[0]?.message).toContain("unknown skill 'verilatr' (did you mean 'verilator'?)");
  });

  it("warns when a named skill needs a grant the SAM lacks, and is quiet when granted", () => {
    const slurm = skills.find((s) => s.name === "slurm");
    if (!slurm || slurm.requires.length === 0) return; // the SLURM skill is another helper's file
    const ds = checkSkillNames(sam(["slurm"]), skills, samText);
    expect(ds[0]).toMatchObject({ severity: "warning", line: 6 });
    expect(ds[0]?.message).toContain("add 'jobs: slurm'");
    expect(checkSkillNames(sam(["slurm"], { jobs: "slurm" }), skills, samText)).toEqual([]);
  });
});
