// Helpers over the SAM node tree shared by the agents and the loop.
import type { SamNode } from "../sam/types.ts";

export function allNodes(root: SamNode): SamNode[] {
  return [root, ...root.children.flatMap(allNodes)];
}

export function findNode(root: SamNode, id: string): SamNode | undefined {
  return allNodes(root).find((node) => node.id === id);
}

/** Nodes not complete whose children are all complete: the only ones work may start on. */
export function readyNodes(root: SamNode, complete: ReadonlySet<string>): SamNode[] {
  return allNodes(root).filter(
    (node) => !complete.has(node.id) && node.children.every((child) => complete.has(child.id)),
  );
}

export function parentOf(root: SamNode, id: string): SamNode | undefined {
  return allNodes(root).find((node) => node.children.some((child) => child.id === id));
}

/** The tree as an indented outline for prompts: ids, titles, completion and Expectation items. */
export function renderTree(root: SamNode, complete: ReadonlySet<string>, depth = 0): string {
  const pad = "  ".repeat(depth);
  const mark = complete.has(root.id) ? "[complete]" : "[open]";
  const lines = [`${pad}- ${root.id} ${mark} **${root.title}**`];
  lines.push(`${pad}  To-do: ${oneLine(root.todo)}`);
  for (const item of root.items) {
    lines.push(
      `${pad}  Expectation ${item.id}: ${oneLine(item.text)}${item.checks.length ? " (has a check)" : ""}`,
    );
  }
  for (const child of root.children) lines.push(renderTree(child, complete, depth + 1));
  return lines.join("\n");
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
