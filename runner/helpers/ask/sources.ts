// What `scifi ask` answers from: the README, every document in docs/, the skills index and the real
// `scifi --help` output (spawned, so it is exactly what the installed CLI says). Each document has
// an id the answer must cite.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { Skill } from "../../skills/index.ts";

const run = promisify(execFile);

/** The scifi installation root (where README.md, docs/ and bin/ are). */
export const SCIFI_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export interface SourceDocument {
  /** What the answer cites, e.g. `README.md`, `help: scifi run`. */
  id: string;
  text: string;
}

export interface HelpText {
  /** `scifi --help` output. */
  main: string;
  /** Command name -> `scifi <command> --help` output. */
  commands: Map<string, string>;
}

/** Command names from the `Commands:` section of commander's help output. */
export function commandNames(help: string): string[] {
  const section = help.split(/^Commands:\s*$/m)[1];
  if (!section) return [];
  return [...section.matchAll(/^ {2}([a-z][a-z0-9-]*)/gm)]
    .map((m) => m[1] ?? "")
    .filter((n) => n && n !== "help");
}

const helpCache = new Map<string, Promise<HelpText>>();

/**
 * Runs `node bin/scifi.js --help` and `... <command> --help` for every command it lists (once per
 * process: the installed CLI does not change while it runs).
 */
export function collectHelp(root = SCIFI_ROOT): Promise<HelpText> {
  let help = helpCache.get(root);
  if (!help) {
    help = spawnHelp(root);
    helpCache.set(root, help);
  }
  return help;
}

async function spawnHelp(root: string): Promise<HelpText> {
  const bin = join(root, "bin", "scifi.js");
  const helpOf = async (args: string[]) =>
    (await run(process.execPath, [bin, ...args], { timeout: 30_000 })).stdout;
  const main = await helpOf(["--help"]);
  const names = commandNames(main);
  const texts = await Promise.all(names.map((n) => helpOf([n, "--help"])));
  return { main, commands: new Map(names.map((n, i) => [n, texts[i] ?? ""])) };
}

export function skillsIndexText(skills: readonly Skill[]): string {
  if (skills.length === 0) return "(no skills installed)";
  return skills
    .map((s) => {
      const needs = s.requires.length > 0 ? ` Needs: ${s.requires.join(", ")}.` : "";
      return `- ${s.name}: ${s.description} When to use: ${s.whenToUse}${needs}`;
    })
    .join("\n");
}

/** The documents in the order the prompt shows them; missing files are left out. */
export function sourceDocuments(
  help: HelpText,
  skills: readonly Skill[],
  root = SCIFI_ROOT,
): SourceDocument[] {
  const docs: SourceDocument[] = [];
  for (const file of docFiles(root)) {
    const path = join(root, file);
    if (existsSync(path)) docs.push({ id: file, text: readFileSync(path, "utf8") });
  }
  docs.push({ id: "skills index", text: skillsIndexText(skills) });
  docs.push({ id: "help: scifi", text: help.main });
  for (const [name, text] of help.commands) docs.push({ id: `help: scifi ${name}`, text });
  return docs;
}

/** README.md, then every Markdown document in docs/ (sorted), as paths relative to the root. */
export function docFiles(root = SCIFI_ROOT): string[] {
  const dir = join(root, "docs");
  const docs = existsSync(dir)
    ? readdirSync(dir)
        .filter((name) => name.endsWith(".md"))
        .sort()
        .map((name) => `docs/${name}`)
    : [];
  return ["README.md", ...docs];
}

export function renderDocuments(docs: readonly SourceDocument[]): string {
  return docs.map((d) => `<document id="${d.id}">\n${d.text.trim()}\n</document>`).join("\n\n");
}
