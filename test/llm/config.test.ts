// The models config: the shipped example parses; mistakes get precise errors; keys come from the
// env var or the key file and a missing key says where to put it.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { costUsd, loadModelsConfig, parseModelsConfig, resolveApiKey } from "../../runner/llm/config.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { freshRun } from "./helpers.ts";

const EXAMPLE = join(import.meta.dirname, "..", "..", "models.example.yaml");
const minimal = {
  name: "m",
  provider: "anthropic" as const,
  model: "x",
  rank: 1,
  prices: { input: 1, output: 2 },
};

describe("models config", () => {
  it("parses the shipped example", () => {
    const config = loadModelsConfig(EXAMPLE);
    expect(config.models.map((m) => [m.name, m.rank])).toEqual([
      ["sonnet", 2],
      ["opus", 3],
      ["local-qwen", 2],
    ]);
    expect(config.retry.maxRetries).toBe(4);
  });

  it("names the field of a mistake", () => {
    expect(() => parseModelsConfig({ models: [{ ...minimal, rnak: 2 }] }, "m.yaml")).toThrow(
      /m\.yaml is invalid:\n {2}models\.0: Unrecognized key: "rnak"/,
    );
    expect(() => parseModelsConfig({ models: [{ ...minimal, rank: 0 }] }, "m.yaml")).toThrow(
      /models\.0\.rank/,
    );
    expect(() => parseModelsConfig({ models: [minimal, minimal] }, "m.yaml")).toThrow(
      "m.yaml: model name 'm' is used twice",
    );
    expect(() => loadModelsConfig("/nonexistent/models.yaml")).toThrow(
      /cannot read models config .*models\.example\.yaml/,
    );
  });

  it("takes the key from the env var, else the key file, else says what to set", () => {
    const entry = parseModelsConfig({ models: [minimal] }).models[0];
    if (!entry) throw new Error("no entry");
    expect(resolveApiKey(entry, { ANTHROPIC_API_KEY: "k-env" })).toBe("k-env");
    const file = join(mkdtempSync(join(tmpdir(), "scifi-key-")), "key");
    writeFileSync(file, "k-file\n");
    expect(resolveApiKey({ ...entry, apiKeyFile: file }, {})).toBe("k-file");
    expect(() => resolveApiKey(entry, {})).toThrow(
      "model 'm': no API key; set ANTHROPIC_API_KEY or set apiKeyFile",
    );
  });

  it("computes cost per million tokens", () => {
    const prices = { input: 3, output: 15, cacheWrite: 3.75, cacheRead: 0.3 };
    expect(costUsd(prices, { input: 1_000_000, output: 0, cacheWrite: 0, cacheRead: 0 })).toBe(3);
    expect(costUsd(prices, { input: 0, output: 2000, cacheWrite: 4000, cacheRead: 100_000 })).toBeCloseTo(
      0.03 + 0.015 + 0.03,
      12,
    );
  });

  it("createModel with a config path reads it and fails clearly without keys", async () => {
    await expect(createModel(EXAMPLE, freshRun().tape, { env: {} })).rejects.toThrow(
      /model 'sonnet': no API key; set ANTHROPIC_API_KEY/,
    );
  });
});
