// Every number on the eval page links to exactly the trials it was computed from (issue 40 item 8).
// A real eval folder (page-eval.ts: summary.json from the engine's writeSummary) with errors, an
// impossible variant, a flagged task and a trial without integrity counts; each link's set is read
// back from the page and compared with the statistic's filter, written out again here by hand.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeEvalReport } from "../../runner/eval/page.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { type LinkedEval, writeLinkedEval } from "./page-eval.ts";

let root: string;
let ev: LinkedEval;
let page: string;
let sets: Map<string, string[]>;

/** Each `#set-<n>` list: the trial ids its members link to. */
function readSets(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const m of text.matchAll(/<section id="(set-\d+)" class="trial-set">([\s\S]*?)<\/section>/g))
    out.set(
      m[1] as string,
      [...(m[2] as string).matchAll(/href="#trial-([^"]+)"/g)].map((x) => x[1] as string),
    );
  return out;
}

/** The table (or other element) with `id`, as text. */
function part(id: string, end = "</table>"): string {
  const at = page.indexOf(`id="${id}"`);
  if (at === -1) throw new Error(`no element #${id}`);
  return page.slice(at, page.indexOf(end, at));
}

/** The rows of a table: each a list of its cells' inner markup. */
function rows(table: string): string[][] {
  return table
    .split("<tr")
    .slice(2)
    .map((row) => row.split("<td").slice(1));
}

/** The trial ids behind the link in `fragment` (its first, or its `index`-th). */
function setIn(fragment: string, index = 0): string[] {
  const ids = [...fragment.matchAll(/href="#(set-\d+)"/g)].map((m) => m[1] as string);
  const id = ids[index];
  if (!id) throw new Error(`no set link in ${fragment.slice(0, 200)}`);
  return sets.get(id) ?? [];
}

const ids = (trials: TrialResult[]) => trials.map((r) => r.trialId).sort();
const impossible = (r: TrialResult) => r.variant === "impossible";
const possible = () => ev.results.filter((r) => !impossible(r));
const judged = (keep: (r: TrialResult) => boolean) =>
  ids(possible().filter((r) => keep(r) && r.status !== "error"));
const errors = (keep: (r: TrialResult) => boolean) =>
  ids(possible().filter((r) => keep(r) && r.status === "error"));
const every = (keep: (r: TrialResult) => boolean) => ids(possible().filter(keep));
const sorted = (list: string[]) => [...list].sort();

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "scifi-eval-page-sets-"));
  ev = writeLinkedEval(root);
  page = readFileSync(writeEvalReport(ev.evalDir), "utf8");
  sets = readSets(page);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("every number on the eval page links to the trials behind it", () => {
  it("the fixture has what the filters must tell apart: errors, an impossible cheat, a flag, a trial without integrity", () => {
    expect(ev.results.some((r) => r.status === "error")).toBe(true);
    expect(ev.results.some((r) => impossible(r) && r.status === "pass")).toBe(true);
    expect(ev.results.some((r) => r.integrity === undefined && r.status !== "error")).toBe(true);
    expect(page).toContain("every trial passed");
  });

  it("per model: the rate, interval and counts over its verdicts; errors apart; money over every trial", () => {
    for (const [name, ...cells] of rows(part("totals-model"))) {
      const model = (name as string).match(/class="model">([^<]+)</)?.[1] as string;
      const own = (r: TrialResult) => r.model === model;
      for (const i of [0, 1, 2])
        expect(sorted(setIn(cells[i] as string)), `${model} cell ${i}`).toEqual(judged(own));
      expect(sorted(setIn(cells[3] as string))).toEqual(errors(own));
      expect(sorted(setIn(cells[4] as string))).toEqual(every(own));
      expect(sorted(setIn(cells[5] as string))).toEqual(every(own));
      // The set holds no impossible trial, though the model ran some.
      expect(setIn(cells[0] as string).some((id) => id.includes(".impossible."))).toBe(false);
    }
  });

  it("per variant: its verdicts over every model and task, never the impossible variant's", () => {
    const variants = rows(part("totals-variant"));
    expect(variants.map(([name]) => (name as string).replace(/^>/, "").replace(/<[\s\S]*$/, ""))).toEqual([
      "nl",
      "ex",
    ]);
    for (const [name, ...cells] of variants) {
      const variant = (name as string).replace(/^>/, "").replace(/<[\s\S]*$/, "");
      expect(sorted(setIn(cells[0] as string))).toEqual(judged((r) => r.variant === variant));
      expect(sorted(setIn(cells[4] as string))).toEqual(every((r) => r.variant === variant));
    }
  });

  it("per cell (task x variant x model): every figure over the cell's verdicts, USD over all of it", () => {
    const groups = rows(part("groups"));
    expect(groups.length).toBe(3 * 2 * 3);
    for (const cells of groups) {
      const [task, variant] = cells.map((c) => c.replace(/^[^>]*>/, "").replace(/<[\s\S]*$/, ""));
      const model = (cells[2] as string).match(/class="model">([^<]+)</)?.[1];
      const cell = (r: TrialResult) => r.task === task && r.variant === variant && r.model === model;
      for (const i of [3, 5, 6, 7, 8, 9])
        expect(sorted(setIn(cells[i] as string)), `cell ${i}`).toEqual(judged(cell));
      expect(sorted(setIn(cells[4] as string))).toEqual(judged(cell));
      if (errors(cell).length) expect(sorted(setIn(cells[4] as string, 1))).toEqual(errors(cell));
      expect(sorted(setIn(cells[10] as string))).toEqual(every(cell));
    }
  });

  it("each comparison: both models' verdicts over the cells both have verdicts on; variants likewise per model", () => {
    const comparisons = part("comparisons", "</div>\n").split('<div class="comparison').slice(1);
    expect(comparisons).toHaveLength(3);
    for (const c of comparisons) {
      const [a, b] = [...c.matchAll(/class="model">([^<]+)</g)].map((m) => m[1] as string);
      const cellsOf = (m: string) =>
        new Set(
          possible()
            .filter((r) => r.model === m && r.status !== "error")
            .map((r) => `${r.task}/${r.variant}`),
        );
      const [ca, cb] = [cellsOf(a as string), cellsOf(b as string)];
      const expected = judged(
        (r) =>
          (r.model === a || r.model === b) &&
          ca.has(`${r.task}/${r.variant}`) &&
          cb.has(`${r.task}/${r.variant}`),
      );
      const numbers = c.slice(c.indexOf('class="muted"'));
      // Strata, difference, interval, p and Holm's p: five links, one set.
      expect([...numbers.matchAll(/href="#set-/g)]).toHaveLength(5);
      for (let i = 0; i < 5; i++) expect(sorted(setIn(numbers, i))).toEqual(expected);
    }
    const variants = part("variant-comparisons", '<p class="muted method">')
      .split('<div class="comparison')
      .slice(1);
    expect(variants).toHaveLength(3);
    for (const c of variants) {
      const model = c.match(/class="model">([^<]+)</)?.[1];
      const tasksOf = (v: string) =>
        new Set(
          possible()
            .filter((r) => r.model === model && r.variant === v && r.status !== "error")
            .map((r) => r.task),
        );
      const [nl, ex] = [tasksOf("nl"), tasksOf("ex")];
      expect(sorted(setIn(c.slice(c.indexOf('class="muted"'))))).toEqual(
        judged((r) => r.model === model && nl.has(r.task) && ex.has(r.task)),
      );
    }
  });

  it("each flag: the flagged task's verdicts; the rates without flagged tasks: the rest", () => {
    const flagged = rows(part("flags")).filter((cells) => (cells[2] as string).includes("href="));
    expect(flagged).toHaveLength(1);
    expect(sorted(setIn((flagged[0] as string[])[2] as string))).toEqual(judged((r) => r.task === "t1"));
    for (const [name, all, without] of rows(part("unflagged"))) {
      const model = (name as string).match(/class="model">([^<]+)</)?.[1];
      expect(sorted(setIn(all as string))).toEqual(judged((r) => r.model === model));
      expect(sorted(setIn(without as string))).toEqual(judged((r) => r.model === model && r.task !== "t1"));
    }
  });

  it("integrity: the verdicts that carry integrity counts; the shares' and kinds' trials with events", () => {
    for (const [name, ...cells] of rows(part("integrity-model"))) {
      const model = (name as string).match(/class="model">([^<]+)</)?.[1];
      const counted = (r: TrialResult) => r.model === model && r.integrity !== undefined;
      for (const i of [0, 1, 3, 4])
        expect(sorted(setIn(cells[i] as string)), `integrity ${i}`).toEqual(judged(counted));
      const events = (r: TrialResult) => counted(r) && Object.values(r.integrity ?? {}).some((n) => n > 0);
      expect(sorted(setIn(cells[2] as string, 1))).toEqual(judged(events));
      expect(sorted(setIn(cells[5] as string))).toEqual(judged(events)); // shell_refused, the only kind
    }
  });

  it("impossible variants: per model and per cell, their own trials only", () => {
    for (const [name, ...cells] of rows(part("impossible-model"))) {
      const model = (name as string).match(/class="model">([^<]+)</)?.[1];
      const own = ev.results.filter((r) => impossible(r) && r.model === model && r.status !== "error");
      expect(sorted(setIn(cells[0] as string))).toEqual(ids(own));
      expect(own.length).toBeGreaterThan(0);
    }
  });

  it("the variant table (SciFi Table 1): a task's cell is its cell, all tasks the model on that variant", () => {
    const tables = part("variant-tables", "<h2>").split("<h3>").slice(1);
    expect(tables).toHaveLength(3);
    for (const table of tables) {
      const model = table.match(/class="model">([^<]+)</)?.[1];
      const all = rows(table).find((cells) => (cells[0] as string).includes("all tasks")) as string[];
      for (const [i, variant] of ["nl", "ex"].entries()) {
        const own = (r: TrialResult) => r.model === model && r.variant === variant;
        const cell = all[i + 1] as string;
        expect(sorted(setIn(cell)), `${model} ${variant}`).toEqual(judged(own));
        expect(sorted(setIn(cell, cell.match(/href="#set-/g)?.length === 4 ? 3 : 2))).toEqual(every(own));
      }
    }
  });

  it("the plots' marks: a model's bar its verdicts, a cell's point its verdicts, Pareto's point every trial, a dot its trial", () => {
    const plot = (id: string) => part(id, "</figure>");
    const bars = plot("plot-rate-model").split('<g class="bar">').slice(0);
    for (const [i, model] of ["alpha", "beta", "gamma"].entries()) {
      const mark = (bars[i] as string).slice((bars[i] as string).lastIndexOf("<a "));
      expect(sorted(setIn(mark)), model).toEqual(judged((r) => r.model === model));
    }
    const pareto = plot("plot-pareto").split('<g class="pareto-point').slice(0, -1);
    for (const [i, model] of ["alpha", "beta", "gamma"].entries()) {
      const mark = (pareto[i] as string).slice((pareto[i] as string).lastIndexOf("<a "));
      expect(sorted(setIn(mark)), model).toEqual(every((r) => r.model === model));
    }
    const points = [
      ...plot("plot-cost-rate").matchAll(/<a href="#(set-\d+)"><circle[^>]*><title>([^:<]+):/g),
    ];
    expect(points).toHaveLength(3 * 2 * 3);
    for (const [, set, label] of points) {
      const [task, variant, model] = (label as string).split(" / ").map((x) => x.replace(" (scripted)", ""));
      expect(sorted(sets.get(set as string) ?? []), label).toEqual(
        judged((r) => r.task === task && r.variant === variant && r.model === model),
      );
    }
    const dots = [
      ...plot("plot-iterations").matchAll(/<a href="#trial-([^"]+)"><circle[^>]*><title>([^:<]+):/g),
    ];
    expect(dots).toHaveLength(ev.results.length);
    for (const [, trial, title] of dots) expect(trial).toBe(title);
    // The tokens chart: a model's stacked bar sums every one of its trials (errors, impossible too).
    const tokens = page.slice(page.indexOf("Tokens per model, by kind"));
    const stacks = [
      ...tokens
        .slice(0, tokens.indexOf("</figure>"))
        .matchAll(/<a href="#(set-\d+)"><rect[^>]*><title>([^:<]+):/g),
    ];
    expect(stacks.map((m) => (m[2] as string).replace(" (scripted)", ""))).toEqual([
      "alpha",
      "beta",
      "gamma",
    ]);
    for (const [, set, model] of stacks) {
      const name = (model as string).replace(" (scripted)", "");
      expect(sorted(sets.get(set as string) ?? []), name).toEqual(
        ids(ev.results.filter((r) => r.model === name)),
      );
    }
  });

  it("no number in a stat table is left without a link or a reason; every set is distinct, used and agrees with the summary", () => {
    for (const id of [
      "groups",
      "totals-model",
      "totals-variant",
      "variant-tables",
      "unflagged",
      "integrity-model",
      "integrity-variant",
      "impossible-model",
      "impossible-groups",
    ]) {
      const cells = [
        ...part(id, id === "variant-tables" ? "<h2>" : "</table>").matchAll(
          /<td class="(?:num|k)[^"]*">([\s\S]*?)<\/td>/g,
        ),
      ];
      expect(cells.length, id).toBeGreaterThan(0);
      for (const [, inner] of cells) expect(inner, id).toMatch(/href="#set-\d+"|class="no-trials"/);
    }
    const members = [...sets.values()].map((list) => sorted(list).join(" "));
    expect(new Set(members).size).toBe(members.length);
    for (const id of sets.keys()) expect(page).toContain(`href="#${id}"`);
    for (const list of sets.values()) for (const trial of list) expect(page).toContain(`id="trial-${trial}"`);
    expect(page).not.toContain("summary.json counts");
  });
});

describe("a summary older than the trials", () => {
  it("says so in the set whose counts differ, instead of linking a wrong set silently", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-eval-page-stale-"));
    try {
      const stale = writeLinkedEval(dir, {
        models: 2,
        tasks: 2,
        repeats: 2,
        variants: ["nl"],
        impossible: false,
      });
      // A trial's result gone after the summary counted it (as a page written mid-eval would see).
      const gone = stale.results.find((r) => r.status !== "error" && r.task === "t0") as TrialResult;
      rmSync(join(stale.evalDir, "trials", gone.trialId), { recursive: true });
      // And a whole cell's (t1 / nl / beta: 2 passes): its numbers say none is on the page.
      for (const r of stale.results.filter((x) => x.task === "t1" && x.model === "beta"))
        rmSync(join(stale.evalDir, "trials", r.trialId), { recursive: true });
      const text = readFileSync(writeEvalReport(stale.evalDir), "utf8");
      // The cell's rate links to its set, which now lacks the trial the summary still counts.
      const row = (text.match(/<tr class="group">[\s\S]*?<\/tr>/g) ?? []).find(
        (r) => r.includes(">t0</td>") && r.includes(`class="model">${gone.model}<`),
      );
      const set = row?.match(/href="#(set-\d+)"/)?.[1];
      expect(set).toBeDefined();
      const section = text.slice(text.indexOf(`<section id="${set}"`));
      expect(section.slice(0, section.indexOf("</section>"))).toMatch(
        /Cell t0 \/ nl \/ .* — trials with a verdict — summary\.json counts \d+ \/ 2 here, the trials&#39; result files \d+ \/ 1/,
      );
      // Every other trial of the cell is still listed.
      expect(readSets(text).get(set as string)).toHaveLength(1);
      const empty = (text.match(/<tr class="group">[\s\S]*?<\/tr>/g) ?? []).find(
        (r) => r.includes(">t1</td>") && r.includes('class="model">beta<'),
      );
      expect(empty).toContain(
        '<td class="num rate"><span class="no-trials missing" title="summary.json counts 2 trials here, but none has a result file on this page">100.0 %',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a big eval's page stays small", () => {
  it("3 models x 20 tasks x 10 repeats: under 1.2 MB with every set (the trials table alone is about 390 KB)", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-eval-page-big-"));
    try {
      const big = writeLinkedEval(dir, {
        models: 3,
        tasks: 20,
        repeats: 10,
        variants: ["nl"],
        impossible: false,
      });
      const text = readFileSync(writeEvalReport(big.evalDir), "utf8");
      expect(readSets(text).size).toBeGreaterThan(100);
      expect(Buffer.byteLength(text)).toBeLessThan(1.2 * 2 ** 20);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
