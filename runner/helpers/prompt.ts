// Prompts are Markdown files next to the helper that uses them; `{{name}}` placeholders are filled
// here. A placeholder without a value is a bug in the caller, so it throws instead of sending it.
import { readFileSync } from "node:fs";

export function renderPrompt(url: URL, values: Record<string, string>): string {
  const template = readFileSync(url, "utf8");
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`prompt ${url.pathname} needs a value for {{${name}}}`);
    return value;
  });
}
