// The docs name only tools that exist: every `- name: X` under `tool_calls` in the README's and
// docs' YAML examples is a work or review tool (the README once said `shell`; it is `bash`).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reviewTools, workTools } from "../runner/tools/registry.ts";

const REPO = join(import.meta.dirname, "..");
const EXTRA = ["submit_job", "job_status", "job_output", "job_cancel"];

describe("tool names in the docs", () => {
  it("every scripted tool call in README.md and docs/*.md names a real tool", () => {
    const known = new Set([...workTools.keys(), ...reviewTools.keys(), ...EXTRA]);
    const files = [
      join(REPO, "README.md"),
      ...readdirSync(join(REPO, "docs"))
        .filter((f) => f.endsWith(".md"))
        .map((f) => join(REPO, "docs", f)),
    ];
    const unknown: string[] = [];
    for (const file of files) {
      for (const block of readFileSync(file, "utf8").matchAll(/```ya?ml\n([\s\S]*?)```/g)) {
        const text = block[1] ?? "";
        if (!text.includes("tool_calls")) continue;
        for (const m of text.matchAll(/(?:-\s*name:\s*|\{\s*name:\s*)([A-Za-z_]+)/g)) {
          if (!known.has(m[1] as string)) unknown.push(`${file}: ${m[1]}`);
        }
      }
    }
    expect(unknown).toEqual([]);
  });
});
