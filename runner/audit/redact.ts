// Secret redaction applied to every string before it reaches the tape. Three sources:
// known secret values (resolved API keys, env vars the models config names as secret),
// values of env vars whose names look secret (…KEY, …TOKEN, …SECRET, …PASSWORD), and
// patterns (Bearer tokens, sk-… keys, Anthropic/OpenAI style keys).
//
// Redaction works on the decoded text of each string, never on JSON text: in JSON a key at the
// start of a line follows `\n`, whose `n` hides it from a word boundary. For the same reason a key
// also starts after an escape written out as text (`\n`, `\t`, `\u000a` in JSON or code held
// inside a string). Each string is redacted on its own (the result depends on nothing outside
// its quotes), so equal strings are written equally wherever they stand, which the incremental
// tape's references rely on (see incremental.ts).

export const REDACTED = "[REDACTED]";

const SECRET_ENV_NAME = /(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$/i;
/** Shorter values are too likely to collide with ordinary text (e.g. "1", "true"). */
const MIN_SECRET_LENGTH = 8;

/**
 * An escape sequence written out as text: `\n`, `\r`, `\t`, `\b`, `\f` or `\u000a`, with its
 * backslash doubled any number of times (JSON in JSON in a string).
 */
const ESCAPE = String.raw`\\+(?:[nrtbf]|u[0-9A-Fa-f]{4})`;
/** Where a key may start: where `\b` would allow it, or right after an escape written as text. */
const START = `(?:(?<![A-Za-z0-9_])|(?<=${ESCAPE}))`;
/** Between `Bearer` and its token: white space, or escapes written as text. */
const GAP = String.raw`(?:\s|${ESCAPE})+`;

/** Key shapes, matched in decoded text. Their bodies hold no character JSON escapes. */
const PATTERNS: string[] = [
  `${START}Bearer${GAP}[A-Za-z0-9._~+/=-]{8,}`,
  `${START}sk-[A-Za-z0-9_-]{16,}`,
  `${START}(?:xox[abpr]|ghp|gho|github_pat|glpat)[-_][A-Za-z0-9_-]{16,}`,
  String.raw`${START}AKIA[0-9A-Z]{16}\b`,
];

/**
 * The same shapes without their start condition, matched in JSON text to find the lines worth
 * decoding. Each matches wherever its pattern matches in a decoded string (a key's body is written
 * as is, and a gap's white space is written as itself or as an escape), so it never misses one.
 */
const CANDIDATES: string[] = [
  String.raw`Bearer[\s\\]`,
  `sk-[A-Za-z0-9_-]{16}`,
  `(?:xox[abpr]|ghp|gho|github_pat|glpat)[-_][A-Za-z0-9_-]{16}`,
  `AKIA[0-9A-Z]{16}`,
];

/** One JSON string literal. */
const STRING_LITERAL = /"[^"\\]*(?:\\[\s\S][^"\\]*)*"/g;

export interface RedactorOptions {
  /** Exact secret values to remove (resolved API keys). */
  values?: string[];
  /** Names of env vars whose values are secret (from the models config `secretEnv`). */
  secretEnvNames?: string[];
  env?: NodeJS.ProcessEnv;
}

interface Compiled {
  /** Everything to remove from a decoded string (global, for replace). */
  plain: RegExp;
  /** Finds JSON text that may hold something to remove (not global: `test` keeps no state). */
  candidate: RegExp;
}

export class Redactor {
  #values: string[] = [];
  /** Rebuilt when a value is added. */
  #compiled: Compiled | undefined;

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
    this.#values = [...this.#values, value];
    this.#compiled = undefined;
  }

  /** Redacts one decoded string. */
  text(input: string): string {
    return input.replace(this.#regexps().plain, REDACTED);
  }

  /**
   * Redacts the JSON text of a record (as JSON.stringify writes it): each string literal that may
   * hold a secret is decoded, redacted as text and encoded again; the others are left as written.
   * One scan of the whole text finds the lines with no candidate at all, which are most of them.
   */
  json(text: string): string {
    const { candidate } = this.#regexps();
    if (!candidate.test(text)) return text;
    return text.replace(STRING_LITERAL, (literal) => this.#literal(literal, candidate));
  }

  /** Deep copy with every string (values and keys) redacted. */
  value<T>(input: T): T {
    return JSON.parse(this.json(JSON.stringify(input))) as T;
  }

  #literal(literal: string, candidate: RegExp): string {
    if (!candidate.test(literal)) return literal;
    const decoded = JSON.parse(literal) as string;
    const redacted = this.text(decoded);
    return redacted === decoded ? literal : JSON.stringify(redacted);
  }

  #regexps(): Compiled {
    this.#compiled ??= {
      plain: alternation([...forms(this.#values, false), ...PATTERNS], "g"),
      candidate: alternation([...forms(this.#values, true), ...CANDIDATES], ""),
    };
    return this.#compiled;
  }
}

/** How many times over a secret value is looked for JSON-escaped: JSON in JSON in a string. */
const NESTING = 2;

/**
 * Each secret value as decoded text may hold it: itself, and JSON-escaped up to NESTING times (JSON
 * held in a string); with `written` set, as JSON text writes those (each escaped once more).
 * Longest first, so a secret that contains another is removed whole.
 */
function forms(values: string[], written: boolean): string[] {
  const all = new Set<string>();
  for (const value of values) {
    let form = written ? escaped(value) : value;
    for (let level = 0; level <= NESTING; level++, form = escaped(form)) all.add(form);
  }
  return [...all].sort((a, b) => b.length - a.length).map(escapeRegExp);
}

function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

function alternation(sources: string[], flags: string): RegExp {
  return new RegExp(sources.join("|"), flags);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
