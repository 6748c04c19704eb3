// `scifi eval --models` specs (docs/eval.md, "Models"): besides `scripted:FILE`, `replay:RUN` and a
// whole models file, `provider:model` (`anthropic:claude-sonnet-5`, `openai:gpt-5@http://host:8000/v1`)
// sets only the work model of a trial: the eval writes a models file of its own for it, the site's
// `<home>/models.yaml` with every work entry replaced by that model (at every rank the site uses)
// and everything else (control models, budget, retry, secrets) kept. Which model played each role
// is recorded per model in eval.json and the summary.
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { basename, extname, join } from "node:path";
import { stringify } from "yaml";
import {
  loadModelsConfig,
  type ModelEntryConfig,
  type ModelsConfig,
  ModelsConfigError,
} from "../llm/config.ts";
import { homePaths } from "../paths.ts";
import type { ModelRoles } from "./summary.ts";

export type { ModelRoles };

export const PROVIDERS = ["anthropic", "openai"] as const;

/** What a spec is, parsed; `provider` specs name a work model only. */
export type ModelSpec =
  | { kind: "scripted"; file: string }
  | { kind: "replay"; run: string }
  | { kind: "config"; file: string }
  | { kind: "provider"; provider: (typeof PROVIDERS)[number]; model: string; baseURL?: string };

/** A spec that cannot be used, with what to give instead (exit 2). */
export class ModelSpecError extends Error {
  override name = "ModelSpecError";
}

const FORMS =
  "give provider:model (anthropic:claude-sonnet-5, openai:gpt-5@http://gpu-node-07:8000/v1), scripted:FILE.yaml, replay:RUN or a models config file";

/** Splits repeated and comma-separated `--models` values into specs, in order, none empty. */
export function splitModels(values: readonly string[]): string[] {
  const specs = values.flatMap((v) => v.split(",")).map((s) => s.trim());
  const empty = specs.indexOf("");
  if (empty >= 0) throw new ModelSpecError(`--models: an empty spec (position ${empty + 1}); ${FORMS}`);
  return specs;
}

/** Parses one spec; throws ModelSpecError naming the spec and what is wrong with it. */
export function parseModelSpec(spec: string): ModelSpec {
  const scripted = /^scripted(?:-openai)?:(.*)$/.exec(spec);
  if (scripted) {
    if (!scripted[1])
      throw new ModelSpecError(`--models '${spec}': give the script file, e.g. scripted:models/a.yaml`);
    return { kind: "scripted", file: scripted[1] };
  }
  if (spec.startsWith("replay:")) {
    const run = spec.slice("replay:".length);
    if (!run)
      throw new ModelSpecError(
        `--models '${spec}': give the run id or folder, e.g. replay:20260101-120000-x-abc123`,
      );
    return { kind: "replay", run };
  }
  const prefixed = /^([A-Za-z][\w-]*):(.*)$/.exec(spec);
  // A file whose name has a colon is a models file, as before.
  if (!prefixed || existsSync(spec)) return { kind: "config", file: spec };
  const [, provider = "", rest = ""] = prefixed;
  if (!(PROVIDERS as readonly string[]).includes(provider))
    throw new ModelSpecError(
      `--models '${spec}': unknown provider '${provider}' (known: ${PROVIDERS.join(", ")}, and scripted, replay); ${FORMS}`,
    );
  const at = rest.indexOf("@");
  const model = at >= 0 ? rest.slice(0, at) : rest;
  const baseURL = at >= 0 ? rest.slice(at + 1) : undefined;
  if (!model || /\s/.test(model))
    throw new ModelSpecError(
      `--models '${spec}': give the model id after '${provider}:', e.g. ${provider}:${provider === "anthropic" ? "claude-sonnet-5" : "gpt-5"}`,
    );
  if (baseURL !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(baseURL);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
      throw new ModelSpecError(
        `--models '${spec}': '${baseURL}' is not an http(s) URL; give the server's base URL after '@', e.g. ${provider}:${model}@http://gpu-node-07:8000/v1`,
      );
  }
  return {
    kind: "provider",
    provider: provider as (typeof PROVIDERS)[number],
    model,
    ...(baseURL !== undefined ? { baseURL } : {}),
  };
}

function entryWords(e: ModelEntryConfig): string {
  return `${e.name} (${e.provider}:${e.model}${e.baseURL ? `@${e.baseURL}` : ""})`;
}

/** Who plays each role in a models config: work entries work; control entries review, control and critique. */
export function rolesOfConfig(config: ModelsConfig): ModelRoles {
  const of = (kind: "work" | "control") =>
    config.models.filter((m) => m.kinds.includes(kind)).map(entryWords);
  const control = of("control");
  return { work: of("work"), review: control, control, critique: control };
}

/** Who plays each role for a spec as the plan runs it (a scripted script plays every role). */
export function rolesOfSpec(spec: string): ModelRoles {
  const parsed = parseModelSpec(spec);
  if (parsed.kind === "scripted") {
    const name = `scripted-${basename(parsed.file, extname(parsed.file))} (scripted)`;
    return { work: [name], review: [name], control: [name], critique: [name] };
  }
  if (parsed.kind === "replay") {
    const name = `replay of ${parsed.run}`;
    return { work: [name], review: [name], control: [name], critique: [name] };
  }
  if (parsed.kind === "config") return rolesOfConfig(loadModelsConfig(parsed.file));
  throw new Error(
    `rolesOfSpec: '${spec}' is a work model; its models file is written first (workModelsFile)`,
  );
}

/**
 * The models file of a `provider:model` spec: the site's, with that model as the only work model
 * (a matching site entry lends its prices, key and settings; a model on a server of its own
 * (`@URL`) without one costs 0 and needs no key), written under `dir`; returns its path.
 */
export function workModelsFile(home: string, spec: string, dir: string, slug: string): string {
  const parsed = parseModelSpec(spec);
  if (parsed.kind !== "provider") throw new Error(`workModelsFile: '${spec}' is not provider:model`);
  const siteFile = homePaths(home).modelsConfig;
  if (!existsSync(siteFile))
    throw new ModelSpecError(
      `--models '${spec}' sets the work model only; the other roles (review, control, critique) come from ${siteFile}, which does not exist: copy models.example.yaml there, or give a whole models file or scripted:FILE`,
    );
  let site: ModelsConfig;
  try {
    site = loadModelsConfig(siteFile);
  } catch (error) {
    if (error instanceof ModelsConfigError) throw new ModelSpecError(`--models '${spec}': ${error.message}`);
    throw error;
  }
  const same = site.models.find(
    (m) =>
      m.provider === parsed.provider &&
      m.model === parsed.model &&
      (parsed.baseURL === undefined || m.baseURL === parsed.baseURL),
  );
  if (!same && parsed.baseURL === undefined)
    throw new ModelSpecError(
      `--models '${spec}': ${siteFile} has no ${parsed.provider} entry for model '${parsed.model}', so its prices and key are unknown: add one (docs/models.md; any kinds), or give a server of its own with @URL (then it costs 0 and needs no key)`,
    );
  const others = site.models
    .map((m) => ({ ...m, kinds: m.kinds.filter((k) => k !== "work") }))
    .filter((m) => m.kinds.length > 0);
  if (others.length === 0)
    throw new ModelSpecError(
      `--models '${spec}': ${siteFile} has no control model (kinds: [control]) to review and control the trials; add one`,
    );
  const base: Omit<ModelEntryConfig, "name" | "rank"> = same
    ? { ...same, kinds: ["work"], ...(parsed.baseURL ? { baseURL: parsed.baseURL } : {}) }
    : {
        provider: parsed.provider,
        model: parsed.model,
        ...(parsed.baseURL ? { baseURL: parsed.baseURL } : {}),
        kinds: ["work"],
        prices: { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 },
        noApiKey: true,
      };
  // A work request asks for an exact rank: the model answers at every rank the site uses.
  const maxRank = Math.max(...site.models.map((m) => m.rank));
  const names = new Set(others.map((m) => m.name));
  const work: ModelEntryConfig[] = [];
  for (let rank = 1; rank <= maxRank; rank++) {
    let name = `${spec}#r${rank}`;
    while (names.has(name)) name = `${name}'`;
    names.add(name);
    work.push({ ...base, name, rank });
  }
  const config = { ...site, models: [...others, ...work] };
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${slug}.yaml`);
  writeFileSync(
    file,
    `# Written by scifi eval for --models ${spec}: ${siteFile} with this work model; do not edit.\n${stringify(config)}`,
  );
  return file;
}
