// `scifi eval --models provider:model` on real Docker: the work model is the one given, the other
// roles stay the site's (models.yaml). Both are scripted servers (labelled scripted in their model
// names) speaking the Anthropic wire format: `ctl` in models.yaml (kinds control and work: the
// work kind is dropped for the trial) serves prescan, review and final review only, and the work
// model given on the command line serves the work role only; the trial passes only if each served
// its own role. The summary and the terminal say which model played every role.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { EvalPlan } from "../../runner/eval/plan.ts";
import type { EvalSummary } from "../../runner/eval/summary.ts";
import { ScriptedServer } from "../../runner/llm/scripted/server.ts";
import { runScifi } from "../helpers/cli.ts";
import { ensureImage } from "../loop/harness.ts";
import { suiteRoot } from "./tasks.ts";

const MODELS = join(import.meta.dirname, "models");

describe("scifi eval --models provider:model (Docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("sets the work model of the trial and keeps the site's control model; the summary names every role", async () => {
    const ws = suiteRoot();
    const control = await ScriptedServer.start(join(MODELS, "control.yaml"));
    const work = await ScriptedServer.start(join(MODELS, "work.yaml"));
    try {
      writeFileSync(
        join(ws.home, "models.yaml"),
        [
          "models:",
          "  - name: ctl",
          "    provider: anthropic",
          "    model: scripted-control",
          `    baseURL: ${control.baseURL}`,
          "    rank: 1",
          "    kinds: [control, work]",
          "    prices: { input: 0, output: 0 }",
          "    noApiKey: true",
          "retry: { maxRetries: 0 }",
          "",
        ].join("\n"),
      );
      const spec = `anthropic:scripted-work@${work.baseURL}`;
      writeFileSync(join(ws.root, "one.yaml"), "tasks: [suite/sound]\n");
      const r = await runScifi(
        ws.home,
        ["eval", join(ws.root, "one.yaml"), "--models", spec, "--no-audit"],
        600_000,
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/: 1 pass, 0 fail, 0 error, 0 pending of 1;/);
      const dir = /^summary: (.*)\/summary\.json/m.exec(r.stdout)?.[1] ?? "";
      const plan = JSON.parse(readFileSync(join(dir, "eval.json"), "utf8")) as EvalPlan;
      expect(plan.models[0]?.label).toBe(spec);
      expect(plan.models[0]?.specs[0]).toBe(join(dir, "models", `${plan.models[0]?.slug}.yaml`));
      const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8")) as EvalSummary;
      const roles = summary.roles?.[0]?.roles;
      expect(roles?.work).toEqual([`${spec}#r1 (anthropic:scripted-work@${work.baseURL})`]);
      expect(roles?.control).toEqual([`ctl (anthropic:scripted-control@${control.baseURL})`]);
      expect(roles?.review).toEqual(roles?.control);
      expect(roles?.critique).toEqual(roles?.control);
      expect(r.stdout).toContain(`models by role:\n  ${spec}: work ${spec}#r1`);
    } finally {
      await control.close();
      await work.close();
    }
  }, 600_000);
});
