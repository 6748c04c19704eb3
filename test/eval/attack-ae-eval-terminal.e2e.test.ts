// Found by the eval/import/evolve attacker session (was in test/open/); fixed in runner/cli/commands/eval.ts
// (lines escaped), runner/evolve/run-facts.ts (blocker passes counted), runner/eval/trial.ts (every other level removed).
// AE-4, AE-5 (attacker session on issues 27/30, written from docs/eval.md and docs/evolve.md): one
// real scripted eval trial in Docker whose work agent reports a blocker with an ESC sequence in its
// reason (test/eval/fixtures/attack/models/escape.yaml).
// - AE-4: `scifi eval` prints the trial's line `FAIL <trial> (BLOCKED: ... <cause>)` with the
//   agent's ESC bytes raw (an OSC title change and a clear-screen reach the scientist's terminal).
//   Promise: trust.md rule 11 ("agent text escaped visibly"), the brief's "causes shown escaped";
//   `scifi evolve` shows the same kind of text through runner/terminal-text.ts. Happened: raw ESC.
// - AE-5: `scifi evolve --evals <id>` counts 0 blockers (and 0 work passes) for a work pass that
//   ended on report_blocker. Promise (docs/evolve.md): "blockers: passes whose work ended `blocked`
//   or whose verdict carries a blocker". Happened: runner/evolve/run-facts.ts looks for
//   `work_end.exit === "blocked"`, the runner writes `exit: "blocker"`, and a pass without a verdict
//   is not a pass at all, so a blocked pass counts nowhere.
import { cpSync, mkdirSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";

const FIXTURE = join(REPO, "test", "eval", "fixtures", "attack");

describe.skipIf(!hasEngine("docker"))("scifi eval / evolve on a hostile blocker (attacker, fixed)", () => {
  const root = mkdtempSync(join(tmpdir(), "ae-eval-open-"));
  const home = join(root, "home");
  let stderr = "";
  beforeAll(async () => {
    ensureImage();
    cpSync(FIXTURE, root, { recursive: true });
    mkdirSync(home);
    stderr = (await runScifi(home, ["eval", join(root, "suite.yaml"), "--backend", "docker"], 300_000))
      .stderr;
  }, 1_800_000);

  it("AE-4 the eval's terminal line shows the agent's ESC as an escape", () => {
    expect(stderr).toContain("BLOCKED: the work agent reported a blocker: stuck");
    expect(stderr).not.toContain("\u001b");
    expect(stderr).not.toContain("\u0007");
  });

  it("AE-5 evolve counts the work pass that ended on a blocker", async () => {
    const id = readdirSync(join(home, "evals"))[0] as string;
    const evolve = await runScifi(home, ["evolve", "--evals", id, "--no-write"], 60_000);
    expect(evolve.code, evolve.stderr).toBe(0);
    // The work table's row: model, [SCRIPTED], rank, passes, runs, iter-to-pass, usd/pass,
    // tokens/pass, tool-fail, allowlist, blockers, cache-read.
    const row = evolve.stdout.split("\n").find((l) => l.includes("scripted-escape [SCRIPTED]  1 "));
    expect(row?.trim().split(/\s+/)[10], row).toBe("1");
  }, 120_000);
});
