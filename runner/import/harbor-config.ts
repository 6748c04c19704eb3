// A Harbor (Terminal-Bench) task's task.toml, read strictly: TOML parsed by smol-toml (errors as
// file:line:column), then every key scifi knows type-checked, each mistake named by its key. Keys
// scifi does not know are kept as a list: the import reports them as not mapped instead of
// dropping them in silence. Field names are Harbor's (harborframework.com/docs/task-format).
import { parse, TomlError } from "smol-toml";

export class HarborImportError extends Error {
  override name = "HarborImportError";
}

export interface HarborConfig {
  name?: string;
  description?: string;
  difficulty?: string;
  agentTimeoutSec?: number;
  verifierTimeoutSec?: number;
  buildTimeoutSec?: number;
  cpus?: number;
  /** Memory in MiB (memory_mb, or `memory = "4G"`). */
  memoryMb?: number;
  storage?: string;
  gpus?: number;
  gpuTypes?: string[];
  /** undefined: not said (Harbor's default is to allow it). */
  allowInternet?: boolean;
  dockerImage?: string;
  /** Names only: values may be secrets and are never printed. */
  env: { where: string; names: string[] }[];
  users: { where: string; user: string }[];
  /** `[[steps]]`: a multi-step task. */
  steps: number;
  /** Keys scifi does not map, dotted (`metadata.category`, `environment.foo`). */
  unknown: string[];
}

const KNOWN: Record<string, readonly string[]> = {
  task: ["name", "description", "authors", "keywords"],
  verifier: ["timeout_sec", "env", "user"],
  agent: ["timeout_sec", "user"],
  environment: [
    "build_timeout_sec",
    "cpus",
    "memory_mb",
    "memory",
    "storage_mb",
    "storage",
    "gpus",
    "gpu_types",
    "allow_internet",
    "docker_image",
    "env",
  ],
};

/** Parses task.toml's text; `file` names it in every error. */
export function readHarborConfig(text: string, file: string): HarborConfig {
  let doc: Record<string, unknown>;
  try {
    doc = parse(text) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) {
      const first = error.message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? error.message;
      throw new HarborImportError(`${file}:${error.line}:${error.column}: not valid TOML: ${first}`);
    }
    throw error;
  }
  const config: HarborConfig = { env: [], users: [], steps: 0, unknown: [] };
  const key = (path: string) => `${file}: ${path}`;
  for (const [top, value] of Object.entries(doc)) {
    if (top === "version" || top === "schema_version") {
      if (typeof value !== "string")
        throw new HarborImportError(`${key(top)} must be a string like "1.0", got ${show(value)}`);
      continue;
    }
    if (top === "steps") {
      config.steps = Array.isArray(value) ? value.length : 1;
      continue;
    }
    if (top === "metadata") {
      const meta = table(value, key("[metadata]"));
      for (const [k, v] of Object.entries(meta)) {
        if (k === "difficulty") config.difficulty = str(v, key("metadata.difficulty"));
        else config.unknown.push(`metadata.${k}`);
      }
      continue;
    }
    const known = KNOWN[top];
    if (!known) {
      config.unknown.push(top);
      continue;
    }
    const section = table(value, key(`[${top}]`));
    for (const [k, v] of Object.entries(section)) {
      const where = `${top}.${k}`;
      if (!known.includes(k)) {
        config.unknown.push(where);
        continue;
      }
      read(config, where, v, key(where));
    }
  }
  return config;
}

function read(config: HarborConfig, where: string, v: unknown, at: string): void {
  switch (where) {
    case "task.name":
      config.name = str(v, at);
      return;
    case "task.description":
      config.description = str(v, at);
      return;
    case "task.authors":
    case "task.keywords":
      config.unknown.push(where);
      return;
    case "agent.timeout_sec":
      config.agentTimeoutSec = seconds(v, at);
      return;
    case "verifier.timeout_sec":
      config.verifierTimeoutSec = seconds(v, at);
      return;
    case "environment.build_timeout_sec":
      config.buildTimeoutSec = seconds(v, at);
      return;
    case "environment.cpus":
      config.cpus = positive(v, at);
      return;
    case "environment.memory_mb":
      config.memoryMb = positive(v, at);
      return;
    case "environment.memory":
      config.memoryMb = megabytes(str(v, at), at);
      return;
    case "environment.storage_mb":
      config.storage = `${positive(v, at)} MB`;
      return;
    case "environment.storage":
      config.storage = str(v, at);
      return;
    case "environment.gpus": {
      const n = positive(v, at, true);
      if (!Number.isInteger(n))
        throw new HarborImportError(`${at} must be a whole number of GPUs, got ${show(v)}`);
      config.gpus = n;
      return;
    }
    case "environment.gpu_types":
      if (!Array.isArray(v) || !v.every((t) => typeof t === "string"))
        throw new HarborImportError(`${at} must be a list of strings like ["H100"], got ${show(v)}`);
      config.gpuTypes = v as string[];
      return;
    case "environment.allow_internet":
      if (typeof v !== "boolean") throw new HarborImportError(`${at} must be true or false, got ${show(v)}`);
      config.allowInternet = v;
      return;
    case "environment.docker_image":
      config.dockerImage = str(v, at);
      return;
    case "verifier.env":
    case "environment.env":
      config.env.push({ where, names: Object.keys(table(v, at)) });
      return;
    case "verifier.user":
    case "agent.user":
      config.users.push({ where, user: str(v, at) });
      return;
  }
}

function table(v: unknown, at: string): Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v))
    throw new HarborImportError(`${at} must be a table, got ${show(v)}`);
  return v as Record<string, unknown>;
}

function str(v: unknown, at: string): string {
  if (typeof v !== "string") throw new HarborImportError(`${at} must be a string, got ${show(v)}`);
  return v;
}

function positive(v: unknown, at: string, zero = false): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0 || (v === 0 && !zero))
    throw new HarborImportError(
      `${at} must be a ${zero ? "non-negative" : "positive"} number, got ${show(v)}`,
    );
  return v;
}

function seconds(v: unknown, at: string): number {
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0)
    throw new HarborImportError(`${at} must be a positive number of seconds (e.g. 120.0), got ${show(v)}`);
  return v;
}

/** Harbor's `memory = "4G"` (also `512M`, `2Gi`, `1.5GB`) in MiB. */
function megabytes(text: string, at: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT])(?:i?B)?\s*$/i.exec(text);
  if (!m) throw new HarborImportError(`${at} must be a size like "4G" or "512M", got ${show(text)}`);
  const scale: Record<string, number> = { K: 1 / 1024, M: 1, G: 1024, T: 1024 * 1024 };
  return Number(m[1]) * (scale[(m[2] as string).toUpperCase()] as number);
}

function show(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (Array.isArray(v)) return "a list";
  if (v instanceof Date || (typeof v === "object" && v !== null && "toISOString" in v)) return "a date";
  if (typeof v === "object" && v !== null) return "a table";
  return String(v);
}
