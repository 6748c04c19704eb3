// Prompts are Markdown files next to the agents. Templates use `{{name}}` placeholders; a missing
// value is an error (a prompt must never silently lose a section).
import { readFileSync } from "node:fs";

const cache = new Map<string, string>();

export function promptFile(name: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    text = readFileSync(new URL(`./${name}`, import.meta.url), "utf8").trim();
    cache.set(name, text);
  }
  return text;
}

export function fillTemplate(name: string, values: Record<string, string>): string {
  return promptFile(name).replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`prompt template ${name} needs a value for {{${key}}}`);
    return value;
  });
}

/** Told to the work and review agents when the SAM has hidden check assets (never what they hold). */
export function hiddenChecksNote(count: number): string {
  return count > 0 ? `\n\n${fillTemplate("hidden-checks.md", { count: String(count) })}` : "";
}
