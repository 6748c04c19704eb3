// Which documents `scifi ask` sends: all of them when they fit the model's budget, else the help
// text and the README first, then the pages the question names, then the rest in order, each
// whole while it fits; the ids left out are told to the model and the user.
import { estimateTokens } from "../../llm/context-window.ts";
import type { SourceDocument } from "./sources.ts";

export interface ChosenDocuments {
  /** The documents sent, in the order the prompt shows them (the sources' order). */
  chosen: SourceDocument[];
  /** Ids of the documents left out to fit the budget. */
  leftOut: string[];
}

/** Tokens one document costs in the prompt (its text and its `<document>` tags). */
function cost(doc: SourceDocument): number {
  return estimateTokens(doc.text.trim()) + estimateTokens(doc.id) + 12;
}

/**
 * The documents within `tokens` (undefined: the model has no known window, all are sent). A page
 * is named by the question when its file name (`docs/check-task.md`: "check-task") or its command
 * (`help: scifi run`: "run") appears in it as a word.
 */
export function chooseDocuments(
  docs: readonly SourceDocument[],
  question: string,
  tokens: number | undefined,
): ChosenDocuments {
  const total = docs.reduce((n, d) => n + cost(d), 0);
  if (tokens === undefined || total <= tokens) return { chosen: [...docs], leftOut: [] };
  const words = new Set(question.toLowerCase().match(/[a-z0-9][a-z0-9-]*/g) ?? []);
  const named = (doc: SourceDocument) => {
    const name = /^docs\/(.+)\.md$/.exec(doc.id)?.[1] ?? /^help: scifi (.+)$/.exec(doc.id)?.[1];
    return name !== undefined && words.has(name.toLowerCase());
  };
  const rank = (doc: SourceDocument) =>
    doc.id.startsWith("help: ") ? 0 : doc.id === "README.md" ? 1 : named(doc) ? 2 : 3;
  const order = docs.map((doc, i) => ({ doc, i })).sort((a, b) => rank(a.doc) - rank(b.doc) || a.i - b.i);
  const kept = new Set<number>();
  let used = 0;
  for (const { doc, i } of order) {
    const c = cost(doc);
    if (used + c > tokens) continue;
    kept.add(i);
    used += c;
  }
  return {
    chosen: docs.filter((_, i) => kept.has(i)),
    leftOut: docs.filter((_, i) => !kept.has(i)).map((d) => d.id),
  };
}
