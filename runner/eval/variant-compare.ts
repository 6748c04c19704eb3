// Variants of one task compared (docs/eval.md, "Variants" and "Impossible variants"): description
// levels must judge alike (checks, assets, front matter, Expectation: only Context and To-do may
// differ); an impossible variant shares the front matter and differs in what is judged. Each
// difference is said in words, naming both files.
import { basename } from "node:path";
import { isCheckFence } from "../sam/check-blocks.ts";
import type { SamDocument, SamMetadata, SamNode } from "../sam/types.ts";

/** What a comparison needs of a suite's variant (suite.ts Variant): its name, file and mark. */
interface Variant {
  name: string;
  file: string;
  impossible?: true;
}

/**
 * Every variant against the first possible one (file-name order; the first of all when none is
 * possible): a possible variant must judge alike in everything, an impossible one must share the
 * front matter (grants, limits, assets) and differ in what is judged from a possible reference
 * (else it is as possible as that one); two impossible variants may be impossible differently.
 */
export function variantProblems(parsed: { variant: Variant; sam: SamDocument }[], problems: string[]): void {
  const first = parsed.find((p) => !p.variant.impossible) ?? parsed[0];
  if (!first) return;
  for (const other of parsed) {
    if (other === first) continue;
    const refused = (what: string, difference: string) =>
      problems.push(
        `${other.variant.file}: ${other.variant.impossible ? "impossible " : ""}variant '${other.variant.name}' must have the same ${what} as '${first.variant.name}' (${basename(first.variant.file)}): ${difference}`,
      );
    const front = frontMatterDifference(first, other);
    if (front) refused("front matter", front);
    const checks = firstDifference(judged(first.sam), judged(other.sam));
    const expectation = firstDifference(expected(first.sam), expected(other.sam));
    if (!other.variant.impossible) {
      if (checks) refused("checks", checks);
      if (expectation) refused("Expectation", expectation);
    } else if (!first.variant.impossible && !checks && !expectation)
      problems.push(
        `${other.variant.file}: variant '${other.variant.name}' is marked impossible but has the same checks and Expectation as '${first.variant.name}' (${basename(first.variant.file)}), so it can be met wherever that one can; give it an Expectation and checks that contradict the To-do, or do not mark it impossible`,
      );
  }
}

/** What is judged: every check (command, stage, timeout, outputs) in tree order and the assets. */
function judged(sam: SamDocument): { label: string; value: string }[] {
  const out: { label: string; value: string }[] = [
    { label: "check_assets", value: JSON.stringify([...sam.metadata.checkAssets].sort()) },
    { label: "hidden_assets", value: JSON.stringify([...(sam.metadata.hiddenAssets ?? [])].sort()) },
  ];
  const visit = (node: SamNode): void => {
    for (const item of node.items)
      for (const c of item.checks)
        out.push({
          label: `check ${c.id}`,
          value: JSON.stringify([
            c.command,
            c.stage ?? "run",
            c.timeoutSec,
            c.outputs ?? [],
            c.hidden === true,
          ]),
        });
    for (const child of node.children) visit(child);
  };
  visit(sam.root);
  return out;
}

/**
 * The front matter key of every metadata field, in the order they are compared. Every field counts
 * (the type makes a new one name its key here); nothing in SamMetadata is derived from the file's
 * path or bytes except a `name` left to its default (the file name), handled in frontMatterValue.
 */
const FRONT_MATTER_KEYS: Record<keyof SamMetadata, string> = {
  name: "name",
  group: "group",
  walltimeSec: "walltime",
  iterations: "iterations",
  budgetUsd: "budget_usd",
  network: "network",
  networkHosts: "network",
  gpu: "gpu",
  cpus: "cpus",
  memoryBytes: "memory",
  mounts: "mounts",
  scratchBytes: "scratch",
  jobs: "jobs",
  skills: "skills",
  image: "image",
  difficulty: "difficulty",
  unpassable: "unpassable",
  rank: "rank",
  approval: "approval",
  approvalTimeoutSec: "approval_timeout",
  checkAssets: "check_assets",
  hiddenAssets: "hidden_assets",
  subtasks: "subtasks",
  allowCommands: "allow_commands",
  critique: "critique",
  keepJobs: "keep_jobs",
};

/** One metadata field as compared: source lines dropped, asset lists as sets, a default name as such. */
function frontMatterValue(p: { variant: Variant; sam: SamDocument }, field: keyof SamMetadata): string {
  const m = p.sam.metadata;
  const value: unknown = m[field];
  if (value === undefined) return "absent";
  if (field === "name" && value === basename(p.variant.file).replace(/\.md$/i, ""))
    return "absent (the file's name)";
  if (field === "mounts") return JSON.stringify(m.mounts.map(({ line: _line, ...rest }) => rest));
  if (field === "checkAssets" || field === "hiddenAssets")
    return JSON.stringify([...(value as string[])].sort());
  return JSON.stringify(value);
}

/**
 * The first metadata field (front matter, units parsed) where two variants differ, naming its key.
 * Referenced sub-SAM files are in `subtasks`: the same paths, so the same files, metadata and all.
 */
function frontMatterDifference(
  a: { variant: Variant; sam: SamDocument },
  b: { variant: Variant; sam: SamDocument },
): string | undefined {
  const fields = new Set([
    ...(Object.keys(FRONT_MATTER_KEYS) as (keyof SamMetadata)[]),
    ...(Object.keys(a.sam.metadata) as (keyof SamMetadata)[]),
    ...(Object.keys(b.sam.metadata) as (keyof SamMetadata)[]),
  ]);
  for (const field of fields) {
    const x = frontMatterValue(a, field);
    const y = frontMatterValue(b, field);
    if (x !== y) return `front matter '${FRONT_MATTER_KEYS[field] ?? field}' differs (${x} vs ${y})`;
  }
  return undefined;
}

/** Text compared up to whitespace: runs of blanks and line ends are one space, ends trimmed. */
function squeezed(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Markdown without its check blocks (```check / ```compare fences): those are compared as checks. */
function withoutChecks(markdown: string): string {
  const kept: string[] = [];
  let fence: RegExp | undefined;
  for (const line of markdown.split("\n")) {
    if (fence) {
      if (fence.test(line)) fence = undefined;
      continue;
    }
    const open = /^\s*(`{3,}|~{3,})\s*([^\s`]*)/.exec(line);
    if (open?.[1] && isCheckFence(open[2])) {
      fence = new RegExp(`^\\s*${open[1][0] === "~" ? "~" : "`"}{${open[1].length},}\\s*$`);
      continue;
    }
    kept.push(line);
  }
  return kept.join("\n");
}

/** A value for a message, cut at 120 characters. */
function shown(value: string | undefined): string {
  if (value === undefined) return "";
  return value.length > 120 ? `${value.slice(0, 119)}…` : value;
}

/**
 * What the review judges, in tree order: every node (root's title, each sub-SAM by id and title),
 * its Expectation items by id and text (whitespace aside), then its whole Expectation section less its
 * check blocks (so text outside the items counts too). Context and To-do are left out: they are what variants may change.
 */
function expected(sam: SamDocument): { label: string; value: string }[] {
  const out: { label: string; value: string }[] = [];
  const visit = (node: SamNode): void => {
    out.push({
      label: node.id === "root" ? "the title" : `sub-SAM ${node.id}`,
      value: JSON.stringify(squeezed(node.title)),
    });
    for (const item of node.items)
      out.push({ label: `Expectation item ${item.id}`, value: JSON.stringify(squeezed(item.text)) });
    out.push({
      label: `the Expectation section of ${node.id}`,
      value: JSON.stringify(squeezed(withoutChecks(node.expectation))),
    });
    for (const child of node.children) visit(child);
  };
  visit(sam.root);
  return out;
}

/** The first entry where two variants differ, in words; undefined when they are the same. */
function firstDifference(
  ja: { label: string; value: string }[],
  jb: { label: string; value: string }[],
): string | undefined {
  for (let i = 0; i < Math.max(ja.length, jb.length); i++) {
    const x = ja[i];
    const y = jb[i];
    if (!x) return `it has an extra ${y?.label} (${shown(y?.value)})`;
    if (!y) return `it lacks ${x.label} (${shown(x.value)})`;
    if (x.label !== y.label) {
      if (!ja.some((e) => e.label === y.label)) return `it has an extra ${y.label} (${shown(y.value)})`;
      if (!jb.some((e) => e.label === x.label)) return `it lacks ${x.label} (${shown(x.value)})`;
    }
    if (x.label !== y.label || x.value !== y.value)
      return `${x.label} differs (${shown(x.value)} vs ${shown(y.value)})`;
  }
  return undefined;
}
