// What must never leave in an export, applied to every piece of exported JSON text before it is
// written: host paths are rewritten (the task folder to the path the agent saw, other known host
// folders to placeholders), secrets are redacted again with the tape's own Redactor (a key added
// to the environment after the run is still caught), and the content of each hidden check asset
// is searched for in every form JSON text can hold it: found, the export is refused. The search
// runs on the text as it came and again after the rewriting (a reference holding a host path or a
// key shape is found before either changes it). What is searched for, per asset: the whole content
// and each line of at least LINE_MIN characters, normalised (no byte-order mark, CRLF as LF, ends
// trimmed: a reference printed without its final newline is found), each as written, as Python's
// json.dumps writes it with ensure_ascii (`\u00b5`), and JSON-escaped up to three levels deep.
import { REDACTED, Redactor } from "../audit/redact.ts";

/** An export that would carry what must not leave; nothing is written. */
export class ExportRefused extends Error {
  override name = "ExportRefused";
}

/** A host folder and what replaces it in exported text. */
export interface PathRewrite {
  from: string;
  to: string;
}

export interface HiddenAsset {
  /** Path relative to the task folder (named in the refusal, never its content). */
  rel: string;
  content: string;
}

/** Hidden contents shorter than this match ordinary text by chance (`1`, `ok`): refused at start. */
const MIN_HIDDEN_CHARS = 8;
/**
 * A line of a hidden asset this long (trimmed) is searched for on its own: a reference printed in
 * part, or a line at a time, is still found. Shorter lines (`1.0`, `}`) occur in ordinary text.
 */
const LINE_MIN = 24;
/**
 * A host path starts where no name character is before it (or right after an escape written as
 * text, `\\n/home/...`) and ends where no name character follows: `/root` is not rewritten inside
 * `run-1/root` or `/rootfs`.
 */
const PATH_START = String.raw`(?:(?<![A-Za-z0-9_.~-])|(?<=\\+[nrtbf]))`;
const PATH_END = "(?![A-Za-z0-9_.~-])";

/** JSON in JSON in a string: as the redactor, two levels of escaping beyond the first. */
const NESTING = 2;

export class ExportGuard {
  readonly #redactor: Redactor;
  readonly #rewrites: { literal: string; from: RegExp; to: string }[];
  readonly #hidden: { rel: string; forms: string[] }[];
  /** How many strings were redacted on export (said in the summary). */
  redactions = 0;

  constructor(options: { redactor?: Redactor; paths?: PathRewrite[]; hidden?: HiddenAsset[] } = {}) {
    this.#redactor = options.redactor ?? new Redactor();
    // Longest first, so a folder inside another is rewritten by its own rule; each also as JSON
    // text writes it (a path with a backslash or quote) at every nesting level.
    this.#rewrites = [];
    const seen = new Set<string>();
    for (const p of (options.paths ?? [])
      .filter((p) => p.from.length > 1)
      .sort((a, b) => b.from.length - a.from.length))
      for (const [level, literal] of escapes(p.from).entries()) {
        // A path without characters JSON escapes reads the same at every level: one rule for all.
        if (seen.has(literal)) continue;
        seen.add(literal);
        this.#rewrites.push({
          literal,
          from: new RegExp(`${PATH_START}${escapeRegExp(literal)}${PATH_END}`, "g"),
          to: (escapes(p.to)[level] as string).replace(/\$/g, "$$$$"),
        });
      }
    this.#hidden = (options.hidden ?? []).map((asset) => {
      if (asset.content.trim().length < MIN_HIDDEN_CHARS)
        throw new ExportRefused(
          `hidden asset ${asset.rel} holds fewer than ${MIN_HIDDEN_CHARS} characters: its content cannot be told apart from ordinary text, so no export of this run can be shown to leave it out`,
        );
      return { rel: asset.rel, forms: hiddenForms(asset.content) };
    });
  }

  /** One piece of exported JSON text, made safe; throws ExportRefused where a hidden asset is in it. */
  json(text: string, where: string): string {
    this.check(text, where); // before rewriting: a hidden path or key shape is still as written
    let out = text;
    // The plain search first: most pieces hold no host path, and it is far cheaper than the regex.
    for (const { literal, from, to } of this.#rewrites)
      if (out.includes(literal)) out = out.replace(from, to);
    const redacted = this.#redactor.json(out);
    if (redacted !== out) this.redactions += countRedacted(redacted) - countRedacted(out);
    this.check(redacted, where);
    return redacted;
  }

  /** A plain string (an OTLP attribute), made safe the same way. */
  text(value: string, where: string): string {
    return JSON.parse(this.json(JSON.stringify(value), where)) as string;
  }

  /** Throws ExportRefused when a hidden asset's content is in `text` in any of its forms. */
  check(text: string, where: string): void {
    if (this.#hidden.length === 0) return;
    // Printed with CRLF line ends (raw or escaped `\\r\\n`), a reference is searched for as LF too.
    const texts = [text];
    const lf = text.replace(/\r(?=\n)/g, "").replace(/\\+r(?=\\+n)/g, "");
    if (lf !== text) texts.push(lf);
    for (const asset of this.#hidden)
      if (asset.forms.some((form) => texts.some((t) => t.includes(form))))
        throw new ExportRefused(
          `${where} holds the content of the hidden check asset ${asset.rel}: hidden references never leave in an export`,
        );
  }
}

/** Every string whose presence in exported text means the asset's content leaves (see the top). */
function hiddenForms(content: string): string[] {
  const normal = content.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const bases = [content, normal.trim()];
  for (const line of normal.split("\n")) if (line.trim().length >= LINE_MIN) bases.push(line.trim());
  const forms = new Set<string>();
  for (const base of bases)
    for (const form of [base, asciiEscaped(base, "lower"), asciiEscaped(base, "upper")])
      for (const f of [form, ...escapes(form)]) forms.add(f);
  return [...forms];
}

/** `text` with every non-ASCII character as `\uXXXX` (Python json.dumps, ensure_ascii=True). */
function asciiEscaped(text: string, hex: "lower" | "upper"): string {
  return text.replace(/[\u0080-\uffff]/g, (c) => {
    const code = c.charCodeAt(0).toString(16).padStart(4, "0");
    return `\\u${hex === "lower" ? code : code.toUpperCase()}`;
  });
}

/** `text` JSON-escaped once, twice, ... (level 0: as JSON text writes a string's content). */
function escapes(text: string): string[] {
  const out: string[] = [];
  let form = text;
  for (let level = 0; level <= NESTING; level++) {
    form = JSON.stringify(form).slice(1, -1);
    out.push(form);
  }
  return out;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function countRedacted(text: string): number {
  return text.split(REDACTED).length - 1;
}
