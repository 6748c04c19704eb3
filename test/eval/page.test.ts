// The eval report page built from a hand-written eval folder (test/eval/page-fixture.ts): hostile
// names escaped, scripted models labelled wherever they appear, links to run reports relative and
// only where a report exists, and the numbers of summary.json shown as the contract gives them.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeEvalReport } from "../../runner/eval/page.ts";
import { escapeHtml } from "../../runner/report/escape.ts";
import { type EvalFixture, HOSTILE_CAUSE, MODEL_A, MODEL_B, TASK, writeEvalFixture } from "./page-fixture.ts";

let root: string;
let fx: EvalFixture;
let page: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "scifi-eval-page-"));
  fx = writeEvalFixture(root);
  const out = writeEvalReport(fx.evalDir);
  expect(out).toBe(join(fx.evalDir, "report.html"));
  page = readFileSync(out, "utf8");
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The text of the row whose first cell holds `trialId`. */
function trialRow(trialId: string): string {
  const row = page.match(
    new RegExp(`<tr class="trial"[^>]*data-trial="${trialId.replaceAll(".", "\\.")}"[\\s\\S]*?</tr>`),
  );
  if (!row) throw new Error(`no row for trial ${trialId}`);
  return row[0];
}

describe("the eval report page", () => {
  it("escapes every hostile string: no markup of theirs, no script at all", () => {
    expect(page).not.toContain("<script");
    expect(page).not.toContain("<img");
    expect(page).not.toContain(HOSTILE_CAUSE);
    expect(page).toContain(escapeHtml(TASK));
    expect(page).toContain(escapeHtml(HOSTILE_CAUSE));
    expect(page).toContain(escapeHtml(MODEL_B));
    expect(page).toMatch(
      /Content-Security-Policy" content="default-src 'none'; style-src 'sha256-[^']+'; script-src 'none'/,
    );
  });

  it("labels the scripted model scripted everywhere its name appears, and only it", () => {
    const name = escapeHtml(MODEL_A);
    const places = page.split(name).length - 1;
    // Tables (groups, totals, trials x2), the models line, the comparison (head, text, difference), plots.
    expect(places).toBeGreaterThanOrEqual(10);
    const labelled =
      page.split(`${name}</span><span class="scripted">scripted</span>`).length -
      1 +
      (page.split(`${name} (scripted)`).length - 1);
    expect(labelled).toBe(places);
    expect(page).not.toContain(`${escapeHtml(MODEL_B)}</span><span class="scripted">`);
    expect(page).not.toContain(`${escapeHtml(MODEL_B)} (scripted)`);
    expect(page).toContain('id="scripted-note"');
  });

  it("labels a scripted name inside a sentence only where it stands alone", async () => {
    const { renderEvalReport } = await import("../../runner/eval/page.ts");
    const { loadEvalPageInput } = await import("../../runner/eval/page-load.ts");
    const input = loadEvalPageInput(fx.evalDir);
    const summary = { ...input.summary, models: ["a", "b"] };
    summary.byModel = [
      { ...(input.summary.byModel[0] as (typeof summary.byModel)[0]), model: "a", scripted: true },
    ];
    summary.groups = [];
    summary.comparisons = [
      {
        ...(input.summary.comparisons[0] as (typeof summary.comparisons)[0]),
        a: "a",
        b: "b",
        text: "a is better than b (not ab, a-b, b/a, a.x); compare a.",
      },
    ];
    const text = renderEvalReport({ summary, trials: [], problems: [] }, fx.evalDir);
    const sentence = text.slice(
      text.indexOf("</strong>: ") + 11,
      text.indexOf("</p>", text.indexOf("</strong>: ")),
    );
    expect(sentence).toBe(
      '<span class="model">a</span><span class="scripted">scripted</span> is better than b (not ab, a-b, b/a, a.x); compare <span class="model">a</span><span class="scripted">scripted</span>.',
    );
  });

  it("links each trial to its run report by a relative path, and says so when there is none", () => {
    expect(trialRow("fit.nl.a.r0")).toContain(
      '<a class="run-report" href="../../runs/run-a0/report.html">run-a0</a>',
    );
    // A run folder named like a URL stays a path: its colon is encoded.
    expect(trialRow("fit.nl.b.r0")).toContain('href="../../runs/javascript%3Aalert(1)/report.html"');
    expect(trialRow("fit.nl.a.r1")).toContain(
      `no run report at <code>${join(fx.runs.a1, "report.html")}</code>`,
    );
    expect(trialRow("fit.nl.a.r1")).toContain("scifi report run-a1");
    expect(trialRow("fit.nl.b.r1")).toContain("no run folder");
    expect(page.match(/class="run-report"/g)).toHaveLength(2);
  });

  it("shows the summary's numbers: rates, Wilson intervals, pass@k, pass^k, means, money, counts", () => {
    // The numbers as text: each is a link to its trials (tested below), unwrapped here.
    const bare = (text: string) => text.replace(/<a class="set" href="#set-\d+">|<\/a>/g, "");
    const rows = (page.match(/<tr class="group">[\s\S]*?<\/tr>/g) ?? []).map(bare);
    expect(rows).toHaveLength(2);
    const [a, b] = rows as [string, string];
    expect(a).toContain("100.0 %");
    expect(a).toContain("34.2 % – 100.0 %");
    expect(a).toContain("2 / 2");
    expect(b).toContain('<td class="num rate">50.0 %<br><span class="median">9.5 % – 90.5 %</span></td>');
    expect(b).toContain('<td class="num">1 / 2<br>(1 errors)</td>');
    expect(b).toContain("9.5 % – 90.5 %");
    expect(b).toContain("1 / 2");
    expect(b).toContain('<td class="k">1: 50.0 %<br>2: 100.0 %</td>'); // pass@k
    expect(b).toContain('<td class="k">1: 50.0 %<br>2: 0.0 %</td>'); // pass^k
    expect(b).toContain('3.50 ± 0.50<br><span class="median">median 3.50</span>'); // iterations
    expect(b).toContain('4.0 s ± 2.0 s<br><span class="median">median 4.0 s</span>'); // wall time
    expect(b).toContain('<td class="num per-pass">$0.0400<br>($0.0400)</td>');
    expect(bare(page)).toContain(
      "6 trials planned: 3 passed, 1 failed, 1 infrastructure errors (counted apart), 1 not run yet",
    );
    expect(bare(page)).toContain("Spent $0.0400 of a $1.0000 budget");
    expect(bare(page)).toMatch(/id="totals-variant"[\s\S]*75\.0 %[\s\S]*30\.1 % – 95\.4 %[\s\S]*\$0\.0133/);
    expect(bare(page)).toContain(
      "+50.0 points, 95 % interval -40.0 points to +100.0 points · p = 0.400, Holm-adjusted p = 0.400",
    );
    expect(page).toContain("not distinguishable with 2 repeats");
    // The comparisons come before the plots and the tables; the variant table follows the plots.
    expect(page.indexOf('id="comparisons"')).toBeLessThan(page.indexOf('id="plot-rate-model"'));
    expect(page.indexOf('id="plot-rate-model"')).toBeLessThan(page.indexOf('id="variant-tables"'));
    expect(page.indexOf('id="variant-tables"')).toBeLessThan(page.indexOf('id="groups"'));
    // The variant table: model B's task row, then its all-tasks row, the variant as the column.
    const tables = bare(page.slice(page.indexOf('id="variant-tables"'), page.indexOf('id="groups"')));
    expect(tables.match(/<tr class="task-row">/g)).toHaveLength(2);
    expect(tables.match(/<tr class="all-tasks">/g)).toHaveLength(2);
    expect(tables).toContain("<th>nl</th>");
    expect(tables).toContain(
      '<span class="rate">50.0 %</span> (1 / 2) · 1 errors<br><span class="median">9.5 % – 90.5 %</span>',
    );
  });

  it("draws the plots: rate bars with error bars, cost against rate, iterations per trial, tokens", () => {
    for (const id of ["plot-rate-model", "plot-rate-variant", "plot-cost-rate", "plot-iterations"])
      expect(page).toContain(`id="${id}"`);
    const section = (id: string) =>
      page.slice(page.indexOf(`id="${id}"`), page.indexOf("</figure>", page.indexOf(`id="${id}"`)));
    expect(section("plot-rate-model").match(/class="errorbar"/g)).toHaveLength(2);
    expect(section("plot-rate-variant").match(/class="errorbar"/g)).toHaveLength(1);
    expect(section("plot-cost-rate").match(/<circle class="point"/g)).toHaveLength(2);
    expect(section("plot-iterations").match(/<circle class="point"/g)).toHaveLength(5);
    expect(page).toContain("Tokens per model, by kind");
  });

  it("lists the trial folders without a valid result and why", () => {
    const list = page.slice(page.indexOf('id="trial-problems"'));
    expect(list).toMatch(/fit\.nl\.b\.r3<\/code>: [^<]*result\.json is missing/);
    expect(list).toMatch(/fit\.nl\.a\.r9<\/code>: does not follow the trial contract: version/);
  });

  it("refuses a summary that breaks the contract, naming the file and the field", () => {
    const bad = mkdtempSync(join(root, "bad-"));
    writeFileSync(join(bad, "summary.json"), JSON.stringify({ version: 1, evalId: "x" }));
    expect(() => writeEvalReport(bad)).toThrow(
      /summary\.json does not follow the summary contract[\s\S]*computedAt/,
    );
    const none = mkdtempSync(join(root, "none-"));
    expect(() => writeEvalReport(none)).toThrow(/summary\.json is missing/);
    expect(() => writeEvalReport(join(root, "nowhere"))).toThrow(/is not an eval folder/);
  });
});
