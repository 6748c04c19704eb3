// The models config file (`<home>/models.yaml`, see models.example.yaml and docs/models.md).
// API keys never live in this file: it names the env var (or a key file) that holds each key.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { parse } from "yaml";
import { z } from "zod";
import { ModelError } from "./types.ts";

const Prices = z
  .strictObject({
    /** USD per million uncached input tokens. */
    input: z.number().nonnegative(),
    /** USD per million output tokens (reasoning included). */
    output: z.number().nonnegative(),
    /** USD per million tokens written to the prompt cache. */
    cacheWrite: z.number().nonnegative().default(0),
    /** USD per million tokens read from the prompt cache. */
    cacheRead: z.number().nonnegative().default(0),
  })
  .describe("USD per million tokens");

const Thinking = z.union([
  z.literal("adaptive"),
  z.literal("off"),
  z.strictObject({ budgetTokens: z.number().int().min(1024) }),
]);

export const ModelEntrySchema = z.strictObject({
  /** Unique name, used on the tape and in errors. */
  name: z.string().min(1),
  provider: z.enum(["anthropic", "openai"]),
  /** Model id sent to the API. */
  model: z.string().min(1),
  /** API base URL (OpenAI-compatible servers: vLLM, Ollama, LiteLLM). */
  baseURL: z.url().optional(),
  /** 1 = cheapest tier. Requests ask for an exact rank. */
  rank: z.number().int().min(1),
  /** Which agent kinds may use this model. */
  kinds: z
    .array(z.enum(["control", "work"]))
    .min(1)
    .default(["control", "work"]),
  prices: Prices,
  /** This model's spending cap in USD for the run; when reached it is disabled and others of its rank take over. */
  budgetUsd: z.number().positive().optional(),
  /** Env var holding the API key (default ANTHROPIC_API_KEY or OPENAI_API_KEY). */
  apiKeyEnv: z.string().optional(),
  /** File holding the API key (first line), used when the env var is unset. `~` is the home folder. */
  apiKeyFile: z.string().optional(),
  /** Local servers that need no key. */
  noApiKey: z.boolean().default(false),
  /** Anthropic: adaptive thinking, a fixed budget, or off. */
  thinking: Thinking.optional(),
  /** Anthropic output_config.effort / OpenAI reasoning_effort. */
  effort: z.enum(["minimal", "low", "medium", "high", "xhigh", "max"]).optional(),
  maxTokens: z.number().int().positive().optional(),
  /**
   * The model's context window in tokens. Default: what an OpenAI-compatible server says
   * (`/v1/models`), else the family's (runner/llm/context-window.ts), else 32,768.
   */
  contextWindow: z.number().int().min(1024).optional(),
});

export const ModelsConfigSchema = z.strictObject({
  models: z.array(ModelEntrySchema).min(1),
  /** Names of env vars whose values are secret: redacted from the tape wherever they appear. */
  secretEnv: z.array(z.string()).default([]),
  /** Per-run caps. */
  budget: z
    .strictObject({ usd: z.number().positive().optional(), tokens: z.number().int().positive().optional() })
    .default({}),
  retry: z
    .strictObject({
      /** Retries of one model on transient errors before falling back. */
      maxRetries: z.number().int().min(0).default(4),
      baseDelayMs: z.number().int().min(0).default(1000),
      maxDelayMs: z.number().int().min(0).default(60_000),
      /** Per-attempt timeout. */
      timeoutMs: z.number().int().positive().default(600_000),
    })
    .default({ maxRetries: 4, baseDelayMs: 1000, maxDelayMs: 60_000, timeoutMs: 600_000 }),
});

export type ModelEntryConfig = z.infer<typeof ModelEntrySchema>;
export type ModelsConfig = z.infer<typeof ModelsConfigSchema>;
export type ModelsConfigInput = z.input<typeof ModelsConfigSchema>;
export type Prices = z.infer<typeof Prices>;

export class ModelsConfigError extends ModelError {
  override name = "ModelsConfigError";
}

export function parseModelsConfig(value: unknown, source = "models config"): ModelsConfig {
  const parsed = ModelsConfigSchema.safeParse(value);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".") || "(top)"}: ${i.message}`);
    throw new ModelsConfigError(
      `${source} is invalid:\n${lines.join("\n")}\nSee docs/models.md for the format.`,
    );
  }
  const names = new Set<string>();
  for (const entry of parsed.data.models) {
    if (names.has(entry.name))
      throw new ModelsConfigError(`${source}: model name '${entry.name}' is used twice`);
    names.add(entry.name);
  }
  return parsed.data;
}

export function loadModelsConfig(path: string): ModelsConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ModelsConfigError(
      `cannot read models config ${path}: ${(error as Error).message}; copy models.example.yaml there or pass --model scripted:FILE`,
    );
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (error) {
    throw new ModelsConfigError(`models config ${path} is not valid YAML: ${(error as Error).message}`);
  }
  return parseModelsConfig(value, path);
}

/** The API key for an entry, from its env var or key file; never from a SAM. */
export function resolveApiKey(entry: ModelEntryConfig, env: NodeJS.ProcessEnv): string {
  if (entry.noApiKey) return "none";
  const envName =
    entry.apiKeyEnv ?? (entry.provider === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
  const fromEnv = env[envName];
  if (fromEnv) return fromEnv.trim();
  if (entry.apiKeyFile) {
    const path = entry.apiKeyFile.replace(/^~(?=\/)/, homedir());
    try {
      const key = readFileSync(path, "utf8").split("\n")[0]?.trim();
      if (key) return key;
    } catch (error) {
      throw new ModelsConfigError(
        `model '${entry.name}': cannot read key file ${path}: ${(error as Error).message}`,
      );
    }
  }
  throw new ModelsConfigError(
    `model '${entry.name}': no API key; set ${envName}${entry.apiKeyFile ? ` or write it to ${entry.apiKeyFile}` : " or set apiKeyFile"} (or noApiKey: true for a local server)`,
  );
}

/** USD for one call from a price table (per million tokens). */
export function costUsd(
  prices: Prices,
  usage: { input: number; output: number; cacheWrite: number; cacheRead: number },
): number {
  return (
    (usage.input * prices.input +
      usage.output * prices.output +
      usage.cacheWrite * prices.cacheWrite +
      usage.cacheRead * prices.cacheRead) /
    1_000_000
  );
}
