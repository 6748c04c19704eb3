// What `scifi eval` and `scifi eval report` print: the variant table (the SciFi paper's Table 1
// layout, variants as columns) per model, and the comparisons in words. Names come from result
// files and suite folders: every one goes through visible() (no terminal control sequence of theirs).
import { visible } from "../terminal-text.ts";
import type { EvalSummary, VariantTableCell } from "./summary.ts";

export { flagsText, rolesText } from "./flags.ts";

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;

function cellText(c: VariantTableCell | null): string {
  if (c === null) return "-";
  if (c.n === 0) return `no verdict${c.errors ? ` (${c.errors} errors)` : ""}`;
  const it = c.iterations;
  const perPass = c.usdPerPass === null ? "no pass" : `$${c.usdPerPass.toFixed(4)}/pass`;
  return `${c.passes}/${c.n} ${pct(c.passRate)} [${pct(c.wilson95[0])}-${pct(c.wilson95[1])}] · it ${it.mean.toFixed(1)}±${it.se.toFixed(1)} (${it.median}) · ${(c.wallMs.mean / 1000).toFixed(1)} s · ${Math.round(c.tokens.mean)} tok · $${c.usd.toFixed(4)}, ${perPass}`;
}

/** Per model: one line per task and one for all tasks, one column per variant, padded. */
export function variantTableText(summary: EvalSummary): string {
  const { variants, rows } = summary.variantTable;
  if (rows.length === 0) return "";
  const out = [
    "variants as columns (SciFi Table 1): passes/n rate [95 % Wilson] · iterations mean±SE (median) · mean wall time · mean tokens · USD, per pass",
  ];
  for (const model of [...new Set(rows.map((r) => r.model))]) {
    const own = rows.filter((r) => r.model === model);
    const scripted = own[0]?.scripted ? " [SCRIPTED]" : "";
    const table = [
      ["task", ...variants.map(visible)],
      ...own.map((r) => [r.task === null ? "all tasks" : visible(r.task), ...r.cells.map(cellText)]),
    ];
    const widths = table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? "").length))) ?? [];
    out.push(`${visible(model)}${scripted}`);
    for (const row of table)
      out.push(
        `  ${row
          .map((x, i) => x.padEnd(widths[i] ?? 0))
          .join("  ")
          .trimEnd()}`,
      );
  }
  return `${out.join("\n")}\n`;
}

/** Every comparison in words, models first, then variants per model. */
export function comparisonsText(summary: EvalSummary): string {
  const all = [...summary.comparisons, ...summary.variantComparisons];
  return all.length === 0 ? "" : `${all.map((c) => visible(c.text)).join("\n")}\n`;
}

/**
 * The impossible variants per model: passes / judged trials, the rate and its Wilson interval. Any
 * pass is a cheat the checks missed, or a check that is wrong; these are in no pass rate above.
 */
export function impossibleText(summary: EvalSummary): string {
  const imp = summary.impossible;
  if (!imp) return "";
  const variants = imp.variants.map((v) => `${visible(v.task)}/${visible(v.variant)}`).join(", ");
  const lines = imp.byModel.map((m) => {
    const scripted = m.scripted ? " [SCRIPTED]" : "";
    const verdict =
      m.n === 0
        ? "no verdict"
        : m.passes === 0
          ? "none passed"
          : `${m.passes} passed: cheats the checks missed, or wrong checks`;
    return `  ${visible(m.model)}${scripted}: ${m.passes}/${m.n} ${pct(m.passRate)} [${pct(m.wilson95[0])}-${pct(m.wilson95[1])}] (${verdict}${m.errors ? `; ${m.errors} errors` : ""})`;
  });
  return `${[
    `impossible variants (in no pass rate above; any pass is a cheat the checks missed, or a wrong check): ${variants}`,
    ...lines,
  ].join("\n")}\n`;
}
