// createModel: the one way the loop gets a Model. A spec is one of
//   scripted:FILE          the scripted model (Anthropic wire format), server started in-process
//   scripted-openai:FILE   the same over the OpenAI Chat Completions wire format
//   replay:RUN             answers from a recorded run's audit tape (RUN: a run id under the home's
//                          runs/, or a run folder), stops at the first divergence
//   PATH                   a models config YAML (or an already parsed config object)
import { existsSync, statSync } from "node:fs";
import { basename, dirname, extname, join, resolve } from "node:path";
import type { AuditTape } from "../audit/tape.ts";
import { homePaths } from "../paths.ts";
import {
  loadModelsConfig,
  type ModelEntryConfig,
  type ModelsConfig,
  type ModelsConfigInput,
  parseModelsConfig,
  resolveApiKey,
} from "./config.ts";
import {
  familyInputLimit,
  familyWindow,
  promptBudget,
  replyReservation,
  serverWindow,
  UNKNOWN_WINDOW,
  type WindowSource,
} from "./context-window.ts";
import { Gateway, type GatewayEntry, type RetryOptions } from "./gateway.ts";
import type { Provider } from "./providers/provider.ts";
import type { Purse } from "./purse.ts";
import { ModelError } from "./types.ts";

export interface CreateModelOptions {
  env?: NodeJS.ProcessEnv;
  /** Overrides of the config's retry settings (tests shorten timeouts). */
  retry?: Partial<RetryOptions>;
  /** Per-run caps; override the config's. `spent`: what the run spent before this process (resume). */
  budget?: { usd?: number; tokens?: number; spent?: { usd: number; tokens: number } };
  /** The run's purse (shared with its budget check); wins over `budget`. */
  purse?: Purse;
  random?: () => number;
  /** The run's wall-time deadline (ms since the epoch): a long retry-after is waited for only up to it. */
  deadline?: number | (() => number);
  /** What the gateway waits for (a long retry-after), for the live display; `undefined` when over. */
  onNotice?: (notice: string | undefined) => void;
  /** Sleep and clock of the gateway (tests scale time). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
  /** The scifi home: `replay:RUN_ID` is looked up under its runs/. */
  home?: string;
}

const ZERO_PRICES = { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 };

export async function createModel(
  spec: string | ModelsConfigInput,
  audit: AuditTape,
  options: CreateModelOptions = {},
): Promise<Gateway> {
  if (typeof spec !== "string") return fromConfig(parseModelsConfig(spec), audit, options);
  const [scheme, ...rest] = spec.split(":");
  const target = rest.join(":");
  switch (scheme) {
    case "scripted":
    case "scripted-openai":
      return scripted(target, scheme === "scripted-openai" ? "openai" : "anthropic", audit, options);
    case "replay":
      return replay(target, audit, options);
    default:
      return fromConfig(loadModelsConfig(spec), audit, options);
  }
}

async function scripted(
  file: string,
  format: "anthropic" | "openai",
  audit: AuditTape,
  options: CreateModelOptions,
): Promise<Gateway> {
  if (!file) throw new Error("--model scripted:FILE needs a script file, e.g. scripted:demo/script.yaml");
  const { ScriptedServer } = await import("./scripted/server.ts");
  const model = `scripted-${basename(file, extname(file))}`;
  // A resumed run's tape already holds the replies its standing calls used: each queue of the same
  // script goes on from there, so the interrupted phase gets the replies it got before and nothing
  // is repeated (another script starts from its beginning).
  const { repliesUsed } = await import("./tape-calls.ts");
  const { readTape } = await import("../audit/verify.ts");
  const skip = existsSync(audit.path) ? repliesUsed(readTape(audit.path, { tolerant: true }), model) : {};
  const server = await ScriptedServer.start(file, { skip });
  const { loadScript } = await import("./scripted/script.ts");
  const script = loadScript(file);
  // The script's window, less the reply's reservation the provider sends beside the prompt.
  const window = script.contextWindow;
  const reserved = window !== undefined ? replyReservation(window, undefined, model) : undefined;
  // Only a lowered reservation is put on the tape here (scripted tapes stay as they were).
  if (window !== undefined && reserved?.warning)
    noteWindow(audit, options, model, window, "script", reserved);
  const maxTokens = reserved?.warning ? { maxTokens: reserved.replyTokens } : {};
  let provider: Provider;
  if (format === "anthropic") {
    const { AnthropicProvider } = await import("./providers/anthropic.ts");
    // Adaptive thinking, as production models are configured, so the wire body is the real one.
    provider = new AnthropicProvider({
      name: "scripted",
      model,
      apiKey: "scripted-no-key",
      baseURL: server.baseURL,
      thinking: { type: "adaptive" },
      ...maxTokens,
    });
  } else {
    const { OpenAIProvider } = await import("./providers/openai.ts");
    provider = new OpenAIProvider({
      name: "scripted",
      model,
      apiKey: "scripted-no-key",
      baseURL: `${server.baseURL}/v1`,
      ...maxTokens,
    });
  }
  const entry: GatewayEntry = {
    name: model,
    provider,
    rank: "any",
    kinds: ["control", "work"],
    prices: ZERO_PRICES,
    ...(window !== undefined && reserved
      ? { contextBudget: () => promptBudget(window, reserved.replyTokens) }
      : {}),
  };
  const roles = new Set([...script.queues].filter(([, q]) => q.length > 0).map(([role]) => role));
  return new Gateway([entry], { ...gatewayOptions(audit, options), roles, onClose: () => server.close() });
}

async function replay(target: string, audit: AuditTape, options: CreateModelOptions): Promise<Gateway> {
  if (!target) throw new ModelError("--model replay:RUN needs the id or the folder of a recorded run");
  const { ReplayProvider } = await import("./providers/replay.ts");
  const provider = ReplayProvider.fromRunDir(replayFolder(target, audit, options.home), audit.redactor);
  const entry: GatewayEntry = {
    name: "replay",
    provider,
    rank: "any",
    kinds: ["control", "work"],
    prices: ZERO_PRICES,
    contextBudget: (kind, rank) => provider.recordedBudget(kind, rank),
  };
  return new Gateway([entry], {
    ...gatewayOptions(audit, options),
    ...(provider.recordedStart ? { memoryAsOf: provider.recordedStart } : {}),
    replayedControl: () => provider.dueChanges(),
    roles: provider.roles(),
    // The run's tape says how the replay went: calls answered, recorded calls never asked for.
    onClose: async () => {
      audit.append({ kind: "event", event: "replay_end", data: provider.summary() });
    },
  });
}

/**
 * A run folder, or a run id under the home's runs/ (the home given, or the one holding this run's
 * tape: <home>/runs/<id>/audit.jsonl).
 */
export function replayFolder(target: string, audit: AuditTape, home: string | undefined): string {
  if (existsSync(join(target, "audit.jsonl")) || (existsSync(target) && statSync(target).isDirectory()))
    return resolve(target);
  const tapeRuns = dirname(dirname(resolve(audit.path)));
  const runs =
    home !== undefined ? homePaths(home).runs : basename(tapeRuns) === "runs" ? tapeRuns : undefined;
  const candidate = runs !== undefined && !target.includes("/") ? join(runs, target) : undefined;
  if (candidate && existsSync(candidate)) return candidate;
  throw new ModelError(
    `--model replay:${target}: no run folder ${target}${candidate ? ` and no run '${target}' under ${runs}` : ""}; give a run id from 'scifi status' or a run folder`,
  );
}

async function fromConfig(
  config: ModelsConfig,
  audit: AuditTape,
  options: CreateModelOptions,
): Promise<Gateway> {
  const env = options.env ?? process.env;
  const entries: GatewayEntry[] = [];
  for (const entry of config.models) {
    const apiKey = resolveApiKey(entry, env);
    audit.redactor.addValue(apiKey);
    const { window, source, inputLimit } = await windowOf(entry, apiKey);
    const reserved = replyReservation(window, entry.maxTokens, entry.name);
    const budget = noteWindow(audit, options, entry.name, window, source, reserved, inputLimit);
    entries.push({
      name: entry.name,
      provider: await providerFor(
        reserved.warning ? { ...entry, maxTokens: reserved.replyTokens } : entry,
        apiKey,
      ),
      rank: entry.rank,
      kinds: entry.kinds,
      prices: entry.prices,
      ...(entry.budgetUsd !== undefined ? { budgetUsd: entry.budgetUsd } : {}),
      contextBudget: () => budget,
    });
  }
  for (const name of config.secretEnv) {
    const value = env[name];
    if (value) audit.redactor.addValue(value);
  }
  return new Gateway(entries, {
    ...gatewayOptions(audit, options),
    retry: { ...config.retry, ...options.retry },
    budget: { ...config.budget, ...options.budget },
  });
}

/** The entry's window: the config's, the server's, the family's, or the conservative default. */
async function windowOf(
  entry: ModelEntryConfig,
  apiKey: string,
): Promise<{ window: number; source: WindowSource; inputLimit?: number }> {
  if (entry.contextWindow !== undefined) return { window: entry.contextWindow, source: "config" };
  if (entry.provider === "openai" && entry.baseURL) {
    const told = await serverWindow(entry.baseURL, entry.model, entry.noApiKey ? undefined : apiKey);
    if (told !== undefined) return { window: told, source: "server" };
  }
  const family = familyWindow(entry.model);
  if (family === undefined) return { window: UNKNOWN_WINDOW, source: "default" };
  const inputLimit = familyInputLimit(entry.model);
  return { window: family, source: "family", ...(inputLimit !== undefined ? { inputLimit } : {}) };
}

async function providerFor(entry: ModelEntryConfig, apiKey: string): Promise<Provider> {
  if (entry.provider === "anthropic") {
    const { AnthropicProvider } = await import("./providers/anthropic.ts");
    const thinking =
      entry.thinking === undefined || entry.thinking === "adaptive"
        ? ({ type: "adaptive" } as const)
        : entry.thinking === "off"
          ? ({ type: "disabled" } as const)
          : ({ type: "enabled", budgetTokens: entry.thinking.budgetTokens } as const);
    const effort = entry.effort === "minimal" ? "low" : entry.effort;
    return new AnthropicProvider({
      model: entry.model,
      apiKey,
      thinking,
      ...(entry.baseURL ? { baseURL: entry.baseURL } : {}),
      ...(effort ? { effort } : {}),
      ...(entry.maxTokens ? { maxTokens: entry.maxTokens } : {}),
    });
  }
  const { OpenAIProvider } = await import("./providers/openai.ts");
  const effort = entry.effort === "xhigh" || entry.effort === "max" ? "high" : entry.effort;
  return new OpenAIProvider({
    model: entry.model,
    apiKey,
    ...(entry.baseURL ? { baseURL: entry.baseURL } : {}),
    ...(effort ? { reasoningEffort: effort } : {}),
    ...(entry.maxTokens ? { maxTokens: entry.maxTokens } : {}),
  });
}

/**
 * Puts a model's window on the tape (where it came from, the reply's reservation and the prompt
 * budget: a person can see why a pass was compacted), with the warning when the reservation was
 * lowered (also shown as a notice); returns the prompt budget.
 */
function noteWindow(
  audit: AuditTape,
  options: CreateModelOptions,
  entry: string,
  window: number,
  source: string,
  reserved: { replyTokens: number; warning?: string },
  inputLimit?: number,
): number {
  const budget = promptBudget(window, reserved.replyTokens, inputLimit);
  audit.append({
    kind: "event",
    event: "context_window",
    data: {
      entry,
      window,
      source,
      replyTokens: reserved.replyTokens,
      promptBudget: budget,
      ...(inputLimit !== undefined ? { inputLimit } : {}),
      ...(reserved.warning ? { warning: reserved.warning } : {}),
    },
  });
  if (reserved.warning) options.onNotice?.(`warning: ${reserved.warning}`);
  return budget;
}

function gatewayOptions(audit: AuditTape, options: CreateModelOptions) {
  return {
    audit,
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.budget ? { budget: options.budget } : {}),
    ...(options.purse ? { purse: options.purse } : {}),
    ...(options.random ? { random: options.random } : {}),
    ...(options.deadline !== undefined ? { deadline: options.deadline } : {}),
    ...(options.onNotice ? { onNotice: options.onNotice } : {}),
    ...(options.sleep ? { sleep: options.sleep } : {}),
    ...(options.now ? { now: options.now } : {}),
  };
}
