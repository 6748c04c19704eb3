// AE-8 (attacker session on issues 27/30, written from docs/eval.md): a scripted work agent that
// cannot do the task kills every process it can reach in its own sandbox (`kill -9 -1; kill -9 1`,
// models/crash.yaml, three repeats). In some trials the container dies twice, the run ends with
// cause `sandbox` and the trial is `error`: "the task was not judged, so an error is neither a pass
// nor a failure, and it is in no pass rate". An agent can thus turn its failures into errors and a
// model that never passes shows n = 0 instead of 0/3 (and `--retry-errors` gives it another go).
// Promise (docs/eval.md, pass/fail/error): `error` is infrastructure, "counted apart from
// failures"; trust.md: the records say what happened. Happened: seen twice in five trials here
// (the first probe's trial ended `fail`, the next one `error`: the container dies or not by timing).
// Fixed: the Docker sandbox's PID 1 is root's without capabilities and the namespace's init, so no
// signal of the agent reaches it (runner/sandbox/docker/options.ts IDLE_SH); a death the sandbox's
// own may cause (an OOM, Apptainer's signal-taking init) fails the command, never the run
// (runner/run/session/revive.ts). The crash script also sends TERM to PID 1 and fills /tmp.
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";

const FIXTURE = join(REPO, "test", "eval", "fixtures", "attack");

describe.skipIf(!hasEngine("docker"))("scifi eval: an agent that kills its own sandbox", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("AE-8 its trials are failures, never infrastructure errors", async () => {
    const root = mkdtempSync(join(tmpdir(), "ae-eval-crash-"));
    cpSync(FIXTURE, root, { recursive: true });
    const home = join(root, "home");
    mkdirSync(home);
    await runScifi(home, ["eval", join(root, "crash.yaml"), "--backend", "docker"], 600_000);
    const evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    const statuses = [0, 1, 2].map((r) => {
      const file = evalFiles(evalDir).result(`hostile.default.crash.r${r}`);
      const result = JSON.parse(readFileSync(file, "utf8")) as TrialResult;
      return `${result.status}: ${result.cause}`;
    });
    expect(statuses.filter((s) => s.startsWith("error"))).toEqual([]);
    expect(statuses.every((s) => s.startsWith("fail"))).toBe(true);
    const summary = JSON.parse(readFileSync(join(evalDir, "summary.json"), "utf8")) as EvalSummary;
    // The model that never passes shows 0 of 3, not n = 0.
    expect(summary.groups.find((g) => g.model === "crash")).toMatchObject({ n: 3, errors: 0, passes: 0 });
  }, 700_000);
});
