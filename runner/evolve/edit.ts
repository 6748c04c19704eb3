// The file changes a proposal can make, as text: a model's rank in models.yaml, a model's entry
// removed from it, lines appended to a prompt file. Edits touch only the bytes they change (the
// YAML node's source range), so comments and layout stay, and the diff shown is the whole change.
// The result is checked with the real models-config parser before it is offered.
import { isMap, isScalar, isSeq, parseDocument } from "yaml";
import { parseModelsConfig } from "../llm/config.ts";

export class EditError extends Error {
  override name = "EditError";
}

/** The source range [start, end) of `models[i]` where `name` is the entry's name. */
function entryNode(text: string, name: string) {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new EditError(`models.yaml is not valid YAML: ${doc.errors[0]?.message}`);
  const models = isMap(doc.contents) ? doc.contents.get("models", true) : undefined;
  if (!isSeq(models)) throw new EditError("models.yaml has no 'models:' list");
  const index = models.items.findIndex((item) => isMap(item) && item.get("name") === name);
  if (index < 0) throw new EditError(`models.yaml has no model named '${name}'`);
  return { models, index, item: models.items[index] as unknown };
}

function checked(text: string, source: string): string {
  parseModelsConfig(parseDocument(text).toJS(), source);
  return text;
}

/** models.yaml with the model's `rank:` value replaced, nothing else touched. */
export function setRank(text: string, name: string, rank: number): string {
  const { item } = entryNode(text, name);
  if (!isMap(item)) throw new EditError(`model '${name}' is not a mapping`);
  const node = item.get("rank", true);
  if (!isScalar(node) || !node.range) throw new EditError(`model '${name}' has no rank to change`);
  const [start, end] = node.range;
  return checked(`${text.slice(0, start)}${rank}${text.slice(end)}`, `models.yaml after the change`);
}

/**
 * models.yaml without the model's entry: its lines, from the line of its `-` to the line before
 * the next entry (or the end of the list), comments on those lines included.
 */
export function removeModel(text: string, name: string): string {
  const { models, index, item } = entryNode(text, name);
  if (models.items.length === 1) throw new EditError(`'${name}' is the only model: models.yaml needs one`);
  const range = (item as { range?: [number, number, number] }).range;
  if (!range) throw new EditError(`model '${name}' has no source range`);
  const lineStart = (offset: number) => text.lastIndexOf("\n", offset - 1) + 1;
  const start = lineStart(range[0]);
  const next = models.items[index + 1] as { range?: [number, number, number] } | undefined;
  const end = next?.range ? lineStart(next.range[0]) : lineEnd(text, range[1]);
  return checked(`${text.slice(0, start)}${text.slice(end)}`, `models.yaml after the change`);
}

/** The offset just after the line holding `offset - 1` (the end of a node's last line). */
function lineEnd(text: string, offset: number): number {
  const newline = text.indexOf("\n", Math.max(0, offset - 1));
  return newline < 0 ? text.length : newline + 1;
}

/** A prompt file with `lines` appended as one block after a blank line. */
export function appendBlock(text: string, block: string): string {
  const base = text.endsWith("\n") ? text : `${text}\n`;
  return `${base}\n${block.endsWith("\n") ? block : `${block}\n`}`;
}

/**
 * A unified diff of two texts (whole-line LCS; the files are small: a models config, a prompt),
 * three lines of context, in the form `diff -u` prints and `patch` reads.
 */
export function unifiedDiff(before: string, after: string, label: string): string {
  const a = splitLines(before);
  const b = splitLines(after);
  const lcs: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      (lcs[i] as number[])[j] =
        a[i] === b[j]
          ? ((lcs[i + 1] as number[])[j + 1] as number) + 1
          : Math.max((lcs[i + 1] as number[])[j] as number, (lcs[i] as number[])[j + 1] as number);
  const ops: { op: " " | "-" | "+"; line: string; ai: number; bi: number }[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      ops.push({ op: " ", line: a[i] as string, ai: i++, bi: j++ });
    } else if (
      i < a.length &&
      (j >= b.length || (lcs[i + 1]?.[j] as number) >= (lcs[i]?.[j + 1] as number))
    ) {
      // Deletions before insertions, as diff -u prints a changed line.
      ops.push({ op: "-", line: a[i] as string, ai: i++, bi: j });
    } else {
      ops.push({ op: "+", line: b[j] as string, ai: i, bi: j++ });
    }
  }
  const out = [`--- a/${label}`, `+++ b/${label}`];
  const changed = ops.map((o, k) => (o.op !== " " ? k : -1)).filter((k) => k >= 0);
  let k = 0;
  while (k < changed.length) {
    const first = changed[k] as number;
    let last = first;
    while (k + 1 < changed.length && (changed[k + 1] as number) - last <= 7) last = changed[++k] as number;
    k++;
    const from = Math.max(0, first - 3);
    const to = Math.min(ops.length - 1, last + 3);
    const hunk = ops.slice(from, to + 1);
    const aStart = (hunk[0] as (typeof ops)[number]).ai;
    const bStart = (hunk[0] as (typeof ops)[number]).bi;
    const aLen = hunk.filter((o) => o.op !== "+").length;
    const bLen = hunk.filter((o) => o.op !== "-").length;
    out.push(
      `@@ -${aLen === 0 ? aStart : aStart + 1},${aLen} +${bLen === 0 ? bStart : bStart + 1},${bLen} @@`,
    );
    for (const o of hunk) out.push(`${o.op}${o.line}`);
  }
  return `${out.join("\n")}\n`;
}

function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}
