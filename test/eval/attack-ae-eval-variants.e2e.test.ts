// Found by the eval/import/evolve attacker session (was in test/open/); fixed in runner/cli/commands/eval.ts
// (lines escaped), runner/evolve/run-facts.ts (blocker passes counted), runner/eval/trial.ts (every other level removed).
// AE-6 (attacker session on issues 27/30, written from docs/eval.md): a suite that evaluates only
// the short description (`variants: [nl]`) of a task folder that also holds `task.ex.md`. The
// trial's copy keeps task.ex.md, and the scripted work agent (models/read-other.yaml) reads the
// exhaustive description from its own task folder.
// Promise (docs/eval.md, Variants): "A trial's copy of the task folder holds only its own variant,
// renamed task.md: an agent given the short description cannot read the exhaustive one."
// Happened: runner/eval/trial.ts freshCopy removes only the *chosen* variants' files (the suite's
// `variants:` filter leaves the others in the copy). Fix: remove every task.<variant>.md of the
// folder, chosen or not.
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles } from "../../runner/eval/plan.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";

const FIXTURE = join(REPO, "test", "eval", "fixtures", "attack");

describe.skipIf(!hasEngine("docker"))("scifi eval: a level left out by variants: (attacker, fixed)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("AE-6 the nl trial's agent cannot read task.ex.md", async () => {
    const root = mkdtempSync(join(tmpdir(), "ae-eval-levels-"));
    cpSync(FIXTURE, root, { recursive: true });
    const home = join(root, "home");
    mkdirSync(home);
    const r = await runScifi(home, ["eval", join(root, "levels.yaml"), "--backend", "docker"], 300_000);
    expect(r.code, r.stderr).toBe(0);
    const evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    const copy = join(evalFiles(evalDir).trial("levels.nl.reader.r0"), "levels");
    const seen = join(copy, "seen.txt");
    expect(existsSync(seen)).toBe(true); // the agent ran
    expect(readFileSync(seen, "utf8")).not.toContain("the ex description");
    expect(readdirSync(copy).filter((f) => /^task\..+\.md$/.test(f))).toEqual([]);
  }, 400_000);
});
