// The eval's HTML page, `evals/<id>/report.html`, from its summary.json. A minimal honest page (a
// plain table of every cell, every value escaped, scripted models labelled); the eval report page
// with plots replaces this file with the same signature.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { EvalSummary } from "./summary.ts";

const esc = (value: unknown): string => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Writes the page of the eval in `evalDir` from its summary.json; returns the page's path. */
export function writeEvalReport(evalDir: string): string {
  const summary = JSON.parse(readFileSync(join(evalDir, "summary.json"), "utf8")) as EvalSummary;
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const rows = summary.groups.map(
    (g) =>
      `<tr><td>${esc(g.task)}</td><td>${esc(g.variant)}</td><td>${esc(g.model)}${g.scripted ? " <b>[SCRIPTED]</b>" : ""}</td><td>${g.passes}/${g.n}</td><td>${pct(g.passRate)} [${pct(g.wilson95[0])}, ${pct(g.wilson95[1])}]</td><td>${g.errors}</td><td>${g.usd.toFixed(4)}</td><td>${g.usdPerPass === null ? "-" : g.usdPerPass.toFixed(4)}</td><td>${g.iterations.mean.toFixed(2)} ± ${g.iterations.se.toFixed(2)}</td></tr>`,
  );
  const comparisons = summary.comparisons.map((c) => `<li>${esc(c.text)}</li>`);
  const t = summary.trials;
  const html = `<!doctype html>
<html><head><meta charset="utf-8"><title>eval ${esc(summary.evalId)}</title></head><body>
<h1>eval ${esc(summary.evalId)}</h1>
<p>suite ${esc(summary.suite)}; ${t.planned} trials planned: ${t.pass} pass, ${t.fail} fail, ${t.error} error, ${t.pending} pending; USD ${summary.budget.spentUsd.toFixed(4)}${summary.budget.usd === null ? "" : ` of ${summary.budget.usd}`}${summary.budget.stoppedByBudget ? " (stopped: budget spent)" : ""}</p>
<table border="1"><tr><th>task</th><th>variant</th><th>model</th><th>passes</th><th>pass rate [Wilson 95 %]</th><th>errors</th><th>USD</th><th>USD per pass</th><th>iterations</th></tr>
${rows.join("\n")}
</table>
<ul>${comparisons.join("\n")}</ul>
</body></html>
`;
  const file = join(evalDir, "report.html");
  writeFileSync(file, html);
  return file;
}
