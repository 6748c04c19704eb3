// Attack on `--slurm` against a local eval of the same plan (attacker session eval2, written from
// docs/eval.md "SLURM").
// Promise (docs/eval.md): "The backend on the node defaults to `auto` (Docker where the node has an
// engine, else Apptainer)", and the job "is the same trial code as a local eval"
// (test/eval/slurm.e2e.test.ts: "the same summary as a local one", but it always passes
// `backend: "docker"`).
// What was done: `scifi eval s.yaml --slurm` (no --backend) with the scripted `pass` and `never`
// models on the one-node test cluster, whose node has Docker.
// What happened: every trial's job runs `scifi eval trial ... --backend auto`, which refuses it
// ("InvalidInput: unknown sandbox backend 'auto'; valid backends: apptainer, docker"): the eval
// reports 0 pass, 0 fail, 4 error (n = 0 in every cell), where the local eval of the same plan
// reports 2 pass, 2 fail (both levels of test/eval/fixtures/suite/echo). With `--backend docker` the cluster agrees with the local eval.
// Fixed: the job's `--backend docker` was taken by `scifi eval`'s own --backend option (commander
// reads a parent's option anywhere on the line), so `eval trial` saw none; it now reads both.
import { cpSync, mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../../runner/eval/engine.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";

const FIXTURES = join(REPO, "test", "eval", "fixtures");

describe.skipIf(!hasEngine("slurm") || !hasEngine("docker"))("scifi eval --slurm without --backend", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("judges the trials on the node's Docker (auto), as a local eval does", async () => {
    const root = mkdtempSync(join(tmpdir(), "eval2-slurm-auto-"));
    cpSync(FIXTURES, root, { recursive: true });
    const models = ["pass", "never"].map((m) => `scripted:${join(root, "models", `${m}.yaml`)}`);
    const home = join(root, "cluster");
    mkdirSync(home);
    const lines: string[] = [];
    const placed = await runEval({
      suite: join(root, "suite"),
      models,
      repeats: 1,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      home,
      slurm: true,
      pollMs: 500,
      log: (l) => lines.push(l),
    });
    // Before a fix: { pass: 0, fail: 0, error: 4 } (unknown sandbox backend 'auto').
    expect(placed.summary.trials, lines.join("\n")).toMatchObject({ pass: 2, fail: 2, error: 0 });
  }, 600_000);
});
