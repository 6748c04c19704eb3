// The items a trace maps: each Expectation item (its id from the parser, `root/e1`) and each To-do
// item. The parser keeps the To-do verbatim, so its items are found here: every top-level list item
// (`-`, `*`, `1.`) is one, `root/t1`, `root/t2` ... in order; a To-do without a list is one item.
import type { SamNode } from "../sam/types.ts";

export interface SpecItem {
  id: string;
  section: "todo" | "expectation";
  text: string;
}

const LIST_ITEM = /^(?:[-*+]|\d+[.)])\s+(.*)$/;

export function todoItems(node: SamNode): SpecItem[] {
  const items: string[][] = [];
  let inFence = false;
  for (const line of node.todo.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) inFence = !inFence;
    const match = inFence ? null : LIST_ITEM.exec(line);
    if (match) items.push([match[1] ?? ""]);
    else if (items.length > 0 && (line.startsWith(" ") || line.startsWith("\t")))
      items.at(-1)?.push(line.trim());
  }
  const texts = items.length > 0 ? items.map((lines) => lines.join(" ").trim()) : [node.todo.trim()];
  return texts.map((text, i) => ({ id: `${node.id}/t${i + 1}`, section: "todo", text }));
}

/** To-do items first (what to build), then the Expectation items (what must hold). */
export function specItems(node: SamNode): SpecItem[] {
  return [
    ...todoItems(node),
    ...node.items.map((item) => ({ id: item.id, section: "expectation" as const, text: item.text.trim() })),
  ];
}
