// Finding a phrase in the To-do and Expectation of a SAM tree (and its line), so the oracle can
// reject phrases the model invented and tell the user where each one is.
import { readFileSync } from "node:fs";
import type { SamDocument, SamNode } from "../../sam/types.ts";
import type { OracleFinding } from "./schema.ts";

export interface Section {
  node: string;
  section: "todo" | "expectation";
  text: string;
  file: string;
  /** Line of the node's heading in `file`. */
  headingLine: number;
}

export function sectionsOf(root: SamNode): Section[] {
  const out: Section[] = [];
  const walk = (node: SamNode) => {
    out.push({
      node: node.id,
      section: "todo",
      text: node.todo,
      file: node.source.file,
      headingLine: node.source.line,
    });
    out.push({
      node: node.id,
      section: "expectation",
      text: node.expectation,
      file: node.source.file,
      headingLine: node.source.line,
    });
    for (const child of node.children) walk(child);
  };
  walk(root);
  return out;
}

/** Case-insensitive, whitespace-collapsed, Markdown emphasis and backticks ignored. */
export function normalise(text: string): string {
  return text.replace(/[`*_]/g, "").replace(/\s+/g, " ").trim().toLowerCase();
}

export function locatePhrase(sam: SamDocument, phrase: string): OracleFinding["where"] | undefined {
  const wanted = normalise(phrase);
  if (!wanted) return undefined;
  for (const s of sectionsOf(sam.root)) {
    if (!normalise(s.text).includes(wanted)) continue;
    return { node: s.node, section: s.section, file: s.file, line: lineOf(s, phrase) };
  }
  return undefined;
}

/** The line in the file where the phrase's first word occurs after the node heading. */
function lineOf(section: Section, phrase: string): number {
  let lines: string[];
  try {
    lines = readFileSync(section.file, "utf8").split("\n");
  } catch {
    return section.headingLine;
  }
  const wanted = normalise(phrase);
  for (let i = section.headingLine - 1; i < lines.length; i++) {
    // A phrase may wrap: compare against this line joined with the next two.
    const window = normalise(lines.slice(i, i + 3).join(" "));
    if (window.includes(wanted) && !normalise(lines.slice(i + 1, i + 3).join(" ")).includes(wanted))
      return i + 1;
  }
  return section.headingLine;
}
