// Every ```sh block of every shipped skill runs, in order, in the local image with the network off,
// exactly as an agent following the skill would run it. Blocks tagged `root-only` run only in an
// image that has ROOT (the local one does not; the skill says so and its fallback block runs here).
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shellBlocks } from "../../runner/skills/blocks.ts";
import { BUILTIN_SKILLS_DIR, loadSkills } from "../../runner/skills/index.ts";
import { hasEngine } from "../helpers/engines.ts";

const IMAGE = process.env.SCIFI_SKILL_IMAGE ?? "scifi-sci:local";
const { skills } = loadSkills([BUILTIN_SKILLS_DIR]);
const OWN = ["common-env", "python-data", "gfortran", "verilator", "root"];

describe.skipIf(!hasEngine("docker"))(`skill commands run in ${IMAGE}`, () => {
  let work: string;
  let hasRoot = false;

  beforeAll(() => {
    const inspect = spawnSync("docker", ["image", "inspect", IMAGE], { stdio: "ignore" });
    if (inspect.status !== 0) {
      throw new Error(`image ${IMAGE} is missing: build it with 'bash scripts/build-image.sh'`);
    }
    hasRoot = run(["sh", "-c", "command -v root"], undefined).status === 0;
    work = mkdtempSync(join(tmpdir(), "scifi-skill-cmds-"));
  });
  afterAll(() => work && rmSync(work, { recursive: true, force: true }));

  for (const name of OWN) {
    it(`${name}: every shell block succeeds`, () => {
      const skill = skills.find((s) => s.name === name);
      if (!skill) throw new Error(`skill ${name} does not load`);
      const blocks = shellBlocks(skill).filter((b) => hasRoot || !b.tags.includes("root-only"));
      expect(blocks.length).toBeGreaterThan(0);
      const taskDir = mkdtempSync(join(work, `${name}-`));
      // One container, blocks in order: later blocks use what earlier ones built, as in a real task.
      // Each block runs with `sh -e` (the agent's bash tool runs `sh -c`), stopping at the first failure.
      mkdirSync(join(taskDir, ".blocks"));
      const steps = blocks.map((b, i) => {
        writeFileSync(join(taskDir, ".blocks", `${i}.sh`), b.script);
        return `echo "==> block at ${name}.md:${b.line}"; (cd /task && sh -e /task/.blocks/${i}.sh) || exit 1`;
      });
      writeFileSync(
        join(taskDir, ".blocks", "all.sh"),
        `${steps.join("\n")}\necho "==> all blocks passed"\n`,
      );
      const result = run(["sh", "/task/.blocks/all.sh"], taskDir);
      const output = `${result.stdout}\n${result.stderr}`;
      expect(output, output).toContain("==> all blocks passed");
      expect(result.status, output).toBe(0);
    }, 600_000);
  }
});

function run(command: string[], taskDir: string | undefined) {
  const mount = taskDir ? ["-v", `${taskDir}:/task`, "-w", "/task"] : [];
  // As the sandbox runs it: read-only root, tmpfs /tmp, HOME=/tmp, no network.
  const sandboxLike = ["--read-only", "--tmpfs", "/tmp", "-e", "HOME=/tmp"];
  const uid = `${process.getuid?.() ?? 0}:${process.getgid?.() ?? 0}`;
  return spawnSync(
    "docker",
    ["run", "--rm", "--network", "none", "--user", uid, ...sandboxLike, ...mount, IMAGE, ...command],
    {
      encoding: "utf8",
      timeout: 590_000,
    },
  );
}
