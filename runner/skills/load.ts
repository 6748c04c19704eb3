// Reading and validating skill files. Errors are `file:line:col` diagnostics like the SAM validator's,
// pointing at the front-matter key that is wrong.
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { isMap, isScalar, LineCounter, parseDocument } from "yaml";
import type { Diagnostic } from "../sam/types.ts";
import { sha256 } from "../sha256.ts";
import { SKILL_KEYS, skillFrontMatter } from "./schema.ts";
import { didYouMean } from "./suggest.ts";
import { GRANTS, type Skill } from "./types.ts";

/** A parsed skill with its domain-pack paths as written (read by loadSkills). */
export type ParsedSkill = Skill & {
  pack?: { critiqueContext?: string | undefined; helpers?: string | undefined };
};

export type SkillParse = { ok: true; skill: ParsedSkill } | { ok: false; diagnostics: Diagnostic[] };

interface FrontMatter {
  yaml: string;
  /** 1-based line of the first YAML line. */
  yamlLine: number;
  body: string;
  bodyLine: number;
}

function splitFrontMatter(text: string): FrontMatter | undefined {
  const lines = text.split("\n");
  if (lines[0]?.trim() !== "---") return undefined;
  const end = lines.findIndex((line, i) => i > 0 && line.trim() === "---");
  if (end < 0) return undefined;
  return {
    yaml: lines.slice(1, end).join("\n"),
    yamlLine: 2,
    body: lines.slice(end + 1).join("\n"),
    bodyLine: end + 2,
  };
}

/** Line of each top-level key in the YAML, so errors can point at it. */
function keyLines(
  yamlText: string,
  firstLine: number,
): { data: unknown; lines: Map<string, number>; errors: Diagnostic[] } {
  const counter = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter: counter });
  const lines = new Map<string, number>();
  if (isMap(doc.contents)) {
    for (const pair of doc.contents.items) {
      if (isScalar(pair.key) && pair.key.range) {
        lines.set(String(pair.key.value), counter.linePos(pair.key.range[0]).line + firstLine - 1);
      }
    }
  }
  const errors = doc.errors.map((e) => ({
    line: (e.linePos?.[0]?.line ?? 1) + firstLine - 1,
    column: e.linePos?.[0]?.col ?? 1,
    message: `front matter is not valid YAML: ${e.message.split("\n")[0]}`,
  }));
  return { data: doc.toJS(), lines, errors: errors.map((e) => ({ file: "", severity: "error", ...e })) };
}

/** Validates one skill's text. `file` is used for messages and for the name check. */
export function parseSkillText(text: string, file: string): SkillParse {
  const at = (line: number, message: string, column = 1): Diagnostic => ({
    file,
    line,
    column,
    severity: "error",
    message,
  });
  const parts = splitFrontMatter(text);
  if (!parts) {
    return {
      ok: false,
      diagnostics: [
        at(
          1,
          "a skill starts with YAML front matter between '---' lines (name, description, when_to_use, requires)",
        ),
      ],
    };
  }
  const { data, lines, errors } = keyLines(parts.yaml, parts.yamlLine);
  if (errors.length > 0) return { ok: false, diagnostics: errors.map((e) => ({ ...e, file })) };
  const diagnostics: Diagnostic[] = [];
  const result = skillFrontMatter.safeParse(data ?? {});
  if (!result.success) {
    for (const issue of result.error.issues) {
      diagnostics.push(
        ...issueDiagnostics({ ...issue, input: valueAt(data, issue.path) }, lines, parts.yamlLine, at),
      );
    }
    diagnostics.sort((a, b) => a.line - b.line);
  }
  if (parts.body.trim().length === 0) {
    diagnostics.push(
      at(parts.bodyLine, "the skill has no body: write the commands and pitfalls below the front matter"),
    );
  }
  if (!result.success || diagnostics.length > 0) return { ok: false, diagnostics };
  const fm = result.data;
  const stem = basename(file).replace(/\.md$/, "");
  if (fm.name !== stem && !file.startsWith("<")) {
    return {
      ok: false,
      diagnostics: [
        at(
          lines.get("name") ?? parts.yamlLine,
          `name '${fm.name}' must match the file name '${stem}.md' (rename one of them)`,
        ),
      ],
    };
  }
  return {
    ok: true,
    skill: {
      name: fm.name,
      description: fm.description,
      whenToUse: fm.when_to_use,
      requires: [...new Set(fm.requires)],
      file,
      body: parts.body,
      text,
      sha256: sha256(text),
      bodyLine: parts.bodyLine,
      ...(fm.critique_context || fm.helpers
        ? { pack: { critiqueContext: fm.critique_context, helpers: fm.helpers } }
        : {}),
    },
  };
}

/**
 * A domain pack's files, read beside the skill file (never through a link): the critique context
 * and the helper folder's registry.md. A pack path that does not hold them is an error.
 */
function withPack(skill: ParsedSkill): Skill | Diagnostic {
  const { pack, ...plain } = skill;
  if (!pack) return plain;
  const base = dirname(skill.file);
  const problem = (message: string): Diagnostic => ({
    file: skill.file,
    line: 1,
    column: 1,
    severity: "error",
    message,
  });
  const out: Skill = { ...plain };
  if (pack.critiqueContext) {
    const file = join(base, pack.critiqueContext);
    const link = linkOnTheWay(base, pack.critiqueContext);
    if (link)
      return problem(
        `critique_context: ${pack.critiqueContext} goes through a symbolic link (${link}); use a plain file`,
      );
    let text: string;
    try {
      text = readBeside(base, pack.critiqueContext);
    } catch {
      return problem(`critique_context: ${pack.critiqueContext} is not a regular file beside the skill`);
    }
    out.critiqueContext = { file, text, sha256: sha256(text) };
  }
  if (pack.helpers) {
    const dir = join(base, pack.helpers);
    const link = linkOnTheWay(base, pack.helpers);
    if (link)
      return problem(`helpers: ${pack.helpers} goes through a symbolic link (${link}); use a plain folder`);
    if (!lstatSync(dir, { throwIfNoEntry: false })?.isDirectory())
      return problem(`helpers: ${pack.helpers} is not a folder beside the skill`);
    let registry: string;
    try {
      registry = readBeside(base, `${pack.helpers}/registry.md`);
    } catch {
      return problem(
        `helpers: ${pack.helpers} has no registry.md (the helpers' names, purpose, inputs, outputs and import path)`,
      );
    }
    out.helpers = { dir, registry };
  }
  return out;
}

/**
 * A regular file at `rel` under `base`, with no symbolic link on the way (each component checked,
 * the last opened O_NOFOLLOW and O_NONBLOCK so a FIFO does not block). The skills folder's layer sits
 * below runner/policy, so this is host-paths' readTaskFile in small.
 */
function readBeside(base: string, rel: string): string {
  const link = linkOnTheWay(base, rel);
  if (link) throw new Error(`${link} is a symbolic link`);
  const fd = openSync(join(base, rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw new Error("not a regular file");
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

/** The first component of `rel` under `base` that is a symbolic link, if any. */
function linkOnTheWay(base: string, rel: string): string | undefined {
  let at = base;
  for (const part of rel.split("/").filter((p) => p !== "" && p !== ".")) {
    at = join(at, part);
    if (lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink()) return at.slice(base.length + 1);
  }
  return undefined;
}

/** The value at a zod issue path (zod does not report inputs by default). */
function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let value = data;
  for (const key of path) {
    if (value === null || typeof value !== "object") return undefined;
    value = (value as Record<PropertyKey, unknown>)[key];
  }
  return value;
}

function issueDiagnostics(
  issue: { code: string; path: PropertyKey[]; message: string; keys?: string[]; input?: unknown },
  lines: Map<string, number>,
  firstLine: number,
  at: (line: number, message: string) => Diagnostic,
): Diagnostic[] {
  if (issue.code === "unrecognized_keys") {
    return (issue.keys ?? []).map((key) =>
      at(
        lines.get(key) ?? firstLine,
        `unknown key '${key}'${didYouMean(key, SKILL_KEYS)}; allowed: ${SKILL_KEYS.join(", ")}`,
      ),
    );
  }
  const key = String(issue.path[0] ?? "");
  const line = lines.get(key) ?? firstLine;
  if (issue.code === "invalid_type" && issue.input === undefined) {
    return [at(line, `missing required key '${key}'`)];
  }
  if (key === "requires" && issue.path.length > 1 && typeof issue.input === "string") {
    return [
      at(
        line,
        `requires: unknown grant '${issue.input}'${didYouMean(issue.input, GRANTS)}; allowed: ${GRANTS.join(", ")}`,
      ),
    ];
  }
  return [at(line, `${issue.path.join(".") || "front matter"}: ${issue.message}`)];
}

/**
 * Loads every `*.md` skill (except README.md) from the given folders, in order. A later folder may not
 * redefine a name an earlier one has: duplicates are errors naming both files. `drafts/` is never read.
 */
export function loadSkills(dirs: string[]): { skills: Skill[]; diagnostics: Diagnostic[] } {
  const skills: Skill[] = [];
  const diagnostics: Diagnostic[] = [];
  const seen = new Map<string, string>();
  for (const dir of dirs.map((d) => resolve(d))) {
    for (const file of skillFiles(dir)) {
      const parsed = parseSkillText(readFileSync(file, "utf8"), file);
      if (!parsed.ok) {
        diagnostics.push(...parsed.diagnostics);
        continue;
      }
      const first = seen.get(parsed.skill.name);
      if (first) {
        diagnostics.push({
          file,
          line: 1,
          column: 1,
          severity: "error",
          message: `skill '${parsed.skill.name}' is already defined in ${first}; rename or remove one`,
        });
        continue;
      }
      const skill = withPack(parsed.skill);
      if (!("name" in skill)) {
        diagnostics.push(skill);
        continue;
      }
      seen.set(skill.name, file);
      skills.push(skill);
    }
  }
  return { skills, diagnostics };
}

function skillFiles(dir: string): string[] {
  let names: string[];
  try {
    if (!statSync(dir).isDirectory()) return [];
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => n.endsWith(".md") && n.toLowerCase() !== "readme.md")
    .sort()
    .map((n) => join(dir, n));
}
