// Secret redaction applied to every string before it reaches the tape. Three sources:
// known secret values (resolved API keys, env vars the models config names as secret),
// values of env vars whose names look secret (…KEY, …TOKEN, …SECRET, …PASSWORD), and
// patterns (Bearer tokens, sk-… keys, Anthropic/OpenAI style keys).

export const REDACTED = "[REDACTED]";

const SECRET_ENV_NAME = /(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$/i;
/** Shorter values are too likely to collide with ordinary text (e.g. "1", "true"). */
const MIN_SECRET_LENGTH = 8;

const PATTERNS: RegExp[] = [
  /\bBearer\s+[A-Za-z0-9._~+/=-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\b(?:xox[abpr]|ghp|gho|github_pat|glpat)[-_][A-Za-z0-9_-]{16,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
];

export interface RedactorOptions {
  /** Exact secret values to remove (resolved API keys). */
  values?: string[];
  /** Names of env vars whose values are secret (from the models config `secretEnv`). */
  secretEnvNames?: string[];
  env?: NodeJS.ProcessEnv;
}

export class Redactor {
  #values: string[] = [];
  /** One alternation of every secret value and pattern, rebuilt when a value is added. */
  #plain: RegExp | undefined;
  #json: RegExp | undefined;

  constructor(options: RedactorOptions = {}) {
    const env = options.env ?? process.env;
    const named = new Set(options.secretEnvNames ?? []);
    const fromEnv = Object.entries(env)
      .filter(([name]) => named.has(name) || SECRET_ENV_NAME.test(name))
      .map(([, value]) => value ?? "");
    for (const value of [...(options.values ?? []), ...fromEnv]) this.addValue(value);
  }

  /** Adds a secret value discovered later (e.g. a key read from a key file). */
  addValue(value: string): void {
    if (value.length < MIN_SECRET_LENGTH || this.#values.includes(value)) return;
    // Longest first so a secret that contains another is removed whole.
    this.#values = [...this.#values, value].sort((a, b) => b.length - a.length);
    this.#plain = undefined;
    this.#json = undefined;
  }

  text(input: string): string {
    this.#plain ??= combined(this.#values.map(escapeRegExp));
    return input.replace(this.#plain, REDACTED);
  }

  /**
   * Redacts the JSON text of a record in one pass: secret values are matched in their JSON-escaped
   * form, and the patterns cannot match a quote or backslash, so the result is still valid JSON.
   */
  json(text: string): string {
    this.#json ??= combined(this.#values.map((v) => escapeRegExp(JSON.stringify(v).slice(1, -1))));
    return text.replace(this.#json, REDACTED);
  }

  /** Deep copy with every string (values and keys) redacted. */
  value<T>(input: T): T {
    return JSON.parse(this.json(JSON.stringify(input))) as T;
  }
}

function combined(values: string[]): RegExp {
  return new RegExp([...values, ...PATTERNS.map((p) => p.source)].join("|"), "g");
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
