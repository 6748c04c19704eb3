// The shell blocks of a skill. Every ```sh block is a command the skill promises works in the image;
// the skill tests run them all, in order, in one container. A block tagged with a requirement
// (```sh root-only) runs only where that tool exists.
import type { Code, Nodes } from "mdast";
import remarkParse from "remark-parse";
import { unified } from "unified";
import type { Skill } from "./types.ts";

export interface ShellBlock {
  /** Tags after the language, e.g. `root-only`. */
  tags: string[];
  script: string;
  /** 1-based line in the skill file. */
  line: number;
}

const SHELL_LANGS = new Set(["sh", "bash", "shell"]);

export function shellBlocks(skill: Pick<Skill, "body" | "bodyLine">): ShellBlock[] {
  const tree = unified().use(remarkParse).parse(skill.body) as Nodes;
  const blocks: ShellBlock[] = [];
  const visit = (node: Nodes): void => {
    if (node.type === "code") collect(node, skill.bodyLine, blocks);
    if ("children" in node) for (const child of node.children) visit(child as Nodes);
  };
  visit(tree);
  return blocks;
}

function collect(node: Code, bodyLine: number, blocks: ShellBlock[]): void {
  if (!node.lang || !SHELL_LANGS.has(node.lang)) return;
  blocks.push({
    tags: (node.meta ?? "").split(/\s+/).filter(Boolean),
    script: node.value,
    line: (node.position?.start.line ?? 1) + bodyLine - 1,
  });
}
