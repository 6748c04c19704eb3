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
  readonly #values: string[];

  constructor(options: RedactorOptions = {}) {
    const env = options.env ?? process.env;
    const named = new Set(options.secretEnvNames ?? []);
    const fromEnv = Object.entries(env)
      .filter(([name]) => named.has(name) || SECRET_ENV_NAME.test(name))
      .map(([, value]) => value ?? "");
    // Longest first so a secret that contains another is removed whole.
    this.#values = [...new Set([...(options.values ?? []), ...fromEnv])]
      .filter((v) => v.length >= MIN_SECRET_LENGTH)
      .sort((a, b) => b.length - a.length);
  }

  /** Adds a secret value discovered later (e.g. a key read from a key file). */
  addValue(value: string): void {
    if (value.length >= MIN_SECRET_LENGTH && !this.#values.includes(value)) {
      this.#values.push(value);
      this.#values.sort((a, b) => b.length - a.length);
    }
  }

  text(input: string): string {
    let out = input;
    for (const value of this.#values) out = out.split(value).join(REDACTED);
    for (const pattern of PATTERNS) out = out.replace(pattern, REDACTED);
    return out;
  }

  /** Deep copy with every string (values and keys) redacted. */
  value<T>(input: T): T {
    return this.#walk(input) as T;
  }

  #walk(input: unknown): unknown {
    if (typeof input === "string") return this.text(input);
    if (Array.isArray(input)) return input.map((item) => this.#walk(item));
    if (input !== null && typeof input === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, val] of Object.entries(input)) {
        if (val !== undefined) out[this.text(key)] = this.#walk(val);
      }
      return out;
    }
    return input;
  }
}
