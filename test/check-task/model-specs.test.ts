// `--models` specs (runner/eval/model-specs.ts): what parses, the precise error for each bad spec,
// and the models file a `provider:model` spec gets: the site's models.yaml with that model as the
// only work model (at every rank), every other entry and setting kept.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  parseModelSpec,
  rolesOfConfig,
  rolesOfSpec,
  splitModels,
  workModelsFile,
} from "../../runner/eval/model-specs.ts";
import { loadModelsConfig } from "../../runner/llm/config.ts";
import { runScifi } from "../helpers/cli.ts";

const SITE = `models:
  - name: sonnet
    provider: anthropic
    model: claude-sonnet-5
    rank: 2
    kinds: [control, work]
    prices: { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 }
    apiKeyEnv: ANTHROPIC_API_KEY
  - name: opus
    provider: anthropic
    model: claude-opus-5
    rank: 3
    kinds: [control]
    prices: { input: 15, output: 75 }
  - name: local-qwen
    provider: openai
    model: Qwen/Qwen3-32B
    baseURL: http://gpu-node-07:8000/v1
    rank: 2
    kinds: [work]
    prices: { input: 0, output: 0 }
    noApiKey: true
budget: { usd: 50 }
retry: { maxRetries: 2 }
`;

function home(site: string | null = SITE): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-model-specs-"));
  if (site !== null) writeFileSync(join(dir, "models.yaml"), site);
  return dir;
}

describe("--models specs", () => {
  it("parses provider:model, with a server, scripted, replay and models files", () => {
    expect(parseModelSpec("anthropic:claude-sonnet-5")).toEqual({
      kind: "provider",
      provider: "anthropic",
      model: "claude-sonnet-5",
    });
    expect(parseModelSpec("openai:gpt-5@http://gpu-node-07:8000/v1")).toEqual({
      kind: "provider",
      provider: "openai",
      model: "gpt-5",
      baseURL: "http://gpu-node-07:8000/v1",
    });
    expect(parseModelSpec("openai:Qwen/Qwen3-32B")).toMatchObject({ model: "Qwen/Qwen3-32B" });
    expect(parseModelSpec("scripted:models/a.yaml")).toEqual({ kind: "scripted", file: "models/a.yaml" });
    expect(parseModelSpec("replay:20260101-x")).toEqual({ kind: "replay", run: "20260101-x" });
    expect(parseModelSpec("models.yaml")).toEqual({ kind: "config", file: "models.yaml" });
    expect(splitModels(["a.yaml,scripted:b.yaml", " anthropic:claude-sonnet-5 "])).toEqual([
      "a.yaml",
      "scripted:b.yaml",
      "anthropic:claude-sonnet-5",
    ]);
  });

  it("each bad spec is refused with what is wrong and what to give", () => {
    expect(() => parseModelSpec("gemini:pro")).toThrow(
      "--models 'gemini:pro': unknown provider 'gemini' (known: anthropic, openai, and scripted, replay); give provider:model",
    );
    expect(() => parseModelSpec("openai:")).toThrow(
      "--models 'openai:': give the model id after 'openai:', e.g. openai:gpt-5",
    );
    expect(() => parseModelSpec("openai:gpt-5@gpu-node-07")).toThrow(
      "--models 'openai:gpt-5@gpu-node-07': 'gpu-node-07' is not an http(s) URL; give the server's base URL after '@', e.g. openai:gpt-5@http://gpu-node-07:8000/v1",
    );
    expect(() => parseModelSpec("scripted:")).toThrow("--models 'scripted:': give the script file");
    expect(() => splitModels(["a.yaml,,b.yaml"])).toThrow("--models: an empty spec (position 2)");
  });

  it("provider:model: the site's file with that work model at every rank, the rest kept", () => {
    const h = home();
    const file = workModelsFile(h, "anthropic:claude-sonnet-5", join(h, "out"), "anthropic-claude-sonnet-5");
    const config = loadModelsConfig(file);
    // sonnet stays a control model; local-qwen (work only) is gone; opus is kept.
    expect(config.models.filter((m) => m.kinds.includes("control")).map((m) => m.name)).toEqual([
      "sonnet",
      "opus",
    ]);
    const work = config.models.filter((m) => m.kinds.includes("work"));
    expect(work.map((m) => [m.name, m.rank, m.model, m.prices.input, m.apiKeyEnv])).toEqual([
      ["anthropic:claude-sonnet-5#r1", 1, "claude-sonnet-5", 3, "ANTHROPIC_API_KEY"],
      ["anthropic:claude-sonnet-5#r2", 2, "claude-sonnet-5", 3, "ANTHROPIC_API_KEY"],
      ["anthropic:claude-sonnet-5#r3", 3, "claude-sonnet-5", 3, "ANTHROPIC_API_KEY"],
    ]);
    expect(config.budget).toEqual({ usd: 50 });
    expect(config.retry.maxRetries).toBe(2);
    const roles = rolesOfConfig(config);
    expect(roles.control).toEqual(["sonnet (anthropic:claude-sonnet-5)", "opus (anthropic:claude-opus-5)"]);
    expect(roles.review).toEqual(roles.control);
    expect(roles.critique).toEqual(roles.control);
    expect(roles.work[0]).toBe("anthropic:claude-sonnet-5#r1 (anthropic:claude-sonnet-5)");
    // A model on a server of its own, not in the site's file: no key, price 0.
    const own = loadModelsConfig(
      workModelsFile(h, "openai:gpt-5@http://127.0.0.1:9/v1", join(h, "out"), "own"),
    );
    expect(own.models.find((m) => m.kinds.includes("work"))).toMatchObject({
      provider: "openai",
      model: "gpt-5",
      baseURL: "http://127.0.0.1:9/v1",
      noApiKey: true,
      prices: { input: 0, output: 0 },
    });
    // A scripted script plays every role.
    expect(rolesOfSpec("scripted:/x/pass.yaml")).toEqual({
      work: ["scripted-pass (scripted)"],
      review: ["scripted-pass (scripted)"],
      control: ["scripted-pass (scripted)"],
      critique: ["scripted-pass (scripted)"],
    });
  });

  it("provider:model without its prices, without a site file, or without a control model: refused", () => {
    const h = home();
    expect(() => workModelsFile(h, "openai:gpt-5", join(h, "out"), "x")).toThrow(
      /has no openai entry for model 'gpt-5', so its prices and key are unknown: add one \(docs\/models\.md; any kinds\), or give a server of its own with @URL/,
    );
    expect(() => workModelsFile(home(null), "anthropic:claude-sonnet-5", join(h, "out"), "x")).toThrow(
      /sets the work model only; the other roles \(review, control, critique\) come from .*models\.yaml, which does not exist/,
    );
    const workOnly = home(
      SITE.replace("kinds: [control, work]", "kinds: [work]").replace("kinds: [control]", "kinds: [work]"),
    );
    expect(() => workModelsFile(workOnly, "anthropic:claude-sonnet-5", join(h, "out"), "x")).toThrow(
      /has no control model \(kinds: \[control\]\) to review and control the trials/,
    );
  });

  it("scifi eval: a bad spec exits 2 before any eval exists", async () => {
    const h = home();
    const bad = await runScifi(
      h,
      ["eval", h, "--models", "scripted:a.yaml", "--models", "gemini:pro"],
      60_000,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("scifi eval: --models 'gemini:pro': unknown provider 'gemini'");
    const empty = await runScifi(h, ["eval", h, "--models", "a.yaml,"], 60_000);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("--models: an empty spec (position 2)");
  }, 120_000);
});
