// Each shipped skill is exercised end to end: the example task under tasks/examples/skills/<skill>/
// runs through the real loop in the real Docker sandbox (scifi-sci:local) with a SCRIPTED agent that
// follows the skill: the pre-scan selects it, and the work agent's bash calls are exactly the
// skill's ```sh blocks, in order (generated from the skill file, so the skill and the run cannot
// drift apart). The runner's own checks must pass, and the tape must show the skill was injected.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { verifyTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { runTask } from "../../runner/run/setup.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { shellBlocks } from "../../runner/skills/blocks.ts";
import { BUILTIN_SKILLS_DIR, loadSkills } from "../../runner/skills/index.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, IMAGE, REPO } from "../run/harness.ts";

const SKILLS = ["common-env", "python-data", "gfortran", "verilator", "root"];
const { skills } = loadSkills([BUILTIN_SKILLS_DIR]);

/** A fresh copy of the example task (the agent writes there) and an empty scifi home. */
function workspace(skill: string) {
  const root = mkdtempSync(join(tmpdir(), `scifi-skill-e2e-${skill}-`));
  const home = join(root, "home");
  const taskDir = join(root, "task");
  mkdirSync(home);
  cpSync(join(REPO, "tasks", "examples", "skills", skill), taskDir, { recursive: true });
  return { root, home, taskDir, sam: join(taskDir, "task.md") };
}

/** The scripted models' replies for one skill's example task (labelled SCRIPTED in the file). */
function scriptFor(skillName: string, samFile: string, hasRoot: boolean): string {
  const skill = skills.find((s) => s.name === skillName);
  if (!skill) throw new Error(`no skill ${skillName}`);
  const parsed = parseSamSync(samFile);
  if (!parsed.ok) throw new Error(`${samFile} does not parse`);
  const blocks = shellBlocks(skill).filter((b) => hasRoot || !b.tags.includes("root-only"));
  const work: Record<string, unknown>[] = blocks.map((b, i) => ({
    // The first step proves the skill's full text reached the work agent.
    ...(i === 0 ? { expect: `# Skill: ${skillName}` } : {}),
    tool_calls: [{ name: "bash", input: { command: b.script, timeout_sec: 300 } }],
  }));
  work.push({
    tool_calls: [
      {
        name: "report_done",
        input: {
          claim: `Followed the ${skillName} skill step by step; every command exited 0.`,
          summary: `Ran the ${blocks.length} shell blocks of skills/${skillName}.md in order.${skillName === "root" && !hasRoot ? " ROOT is not installed in this image; used the numpy/scipy fallback, ROOT was not used." : ""}`,
        },
      },
    ],
  });
  const script = {
    prescan: [
      {
        expect: `**${skillName}**`,
        json: {
          node: "root",
          rank: 1,
          skills: [skillName],
          context: `The ${skillName} skill covers this task.`,
          plan: `Follow the ${skillName} skill's commands in order.`,
          direction: "follow the skill",
        },
      },
    ],
    work,
    review: [
      {
        json: {
          items: parsed.sam.root.items.map((item) => ({
            id: item.id,
            pass: true,
            evidence: "checks and outputs",
          })),
          findings: [],
          fixes: [],
          rank_adjustment: 0,
        },
      },
    ],
    final_review: [{ json: { group_suggestions: [], global_suggestions: [] } }],
  };
  return `# SCRIPTED models (not a real LLM), generated from skills/${skillName}.md\n${stringify(script)}`;
}

describe.skipIf(!hasEngine("docker"))(
  "each skill's example task passes end to end (docker, scripted agent)",
  () => {
    let hasRoot = false;
    beforeAll(() => {
      ensureImage();
      hasRoot = spawnSync("docker", ["run", "--rm", IMAGE, "sh", "-c", "command -v root"]).status === 0;
    }, 1_800_000);

    for (const name of SKILLS) {
      it(`${name}: the agent follows the skill and the runner's checks pass`, async () => {
        const ws = workspace(name);
        const scriptFile = join(ws.root, `${name}.script.yaml`);
        writeFileSync(scriptFile, scriptFor(name, ws.sam, hasRoot));
        const result = await runTask({
          home: ws.home,
          task: ws.sam,
          backend: "docker",
          model: `scripted:${scriptFile}`,
          retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
        });
        const tape = readFileSync(join(result.dir, "audit.jsonl"), "utf8");
        const history = readHistory(join(result.dir, "history.jsonl"));
        const checks = history.flatMap((e) => (e.type === "check" ? [[e.check, e.passed]] : []));
        expect(result.outcome, JSON.stringify({ checks, history: history.slice(-4) })).toMatchObject({
          status: "passed",
        });
        expect(checks.length).toBeGreaterThan(0);
        expect(checks.every(([, passed]) => passed)).toBe(true);
        // The skill text was injected and recorded by name and hash; no step of the skill failed.
        const skill = skills.find((s) => s.name === name);
        expect(tape).toContain(`skill:${name}`);
        expect(tape).toContain(skill?.sha256);
        expect(tape).toContain("exit code: 0");
        expect(tape).not.toMatch(/exit code: (killed|[1-9])/);
        expect(verifyTape(join(result.dir, "audit.jsonl"))).toMatchObject({ ok: true });
        rmSync(ws.root, { recursive: true, force: true }); // kept on failure, for inspection
      }, 900_000);
    }
  },
);
