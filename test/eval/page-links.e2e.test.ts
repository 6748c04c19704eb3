/// <reference lib="dom" />
// The eval page of a real eval folder (page-eval.ts: errors, an impossible variant, a flagged task)
// in headless Chromium: every number is a link to the trials behind it, a click shows that list
// alone (CSS :target, no script), every link lands on an element of the page and every trial of a
// list on its row; the flags and comparisons come before every per-model table; the count axis
// ticks where its dots are and long model names keep distinct, non-overlapping labels.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderEvalReport, writeEvalReport } from "../../runner/eval/page.ts";
import { loadEvalPageInput } from "../../runner/eval/page-load.ts";
import { hasEngine } from "../helpers/engines.ts";
import { launchChromium, openFile } from "../report/browser.ts";
import { type LinkedEval, writeLinkedEval } from "./page-eval.ts";

let root: string;
let ev: LinkedEval;
let file: string;
let browser: Browser;

/** The tables whose numbers must each link to their trials (the trials table is the trials). */
const STAT_TABLES = [
  "#unflagged",
  "#groups",
  "#variant-tables table",
  "#totals-model",
  "#totals-variant",
  "#integrity-model",
  "#integrity-variant",
  "#impossible-model",
  "#impossible-groups",
];

/** The ids of the trial lists shown now (display other than none). */
async function shownSets(page: Page): Promise<string[]> {
  return page
    .locator("section.trial-set")
    .evaluateAll((els) => els.filter((e) => getComputedStyle(e).display !== "none").map((e) => e.id));
}

describe.skipIf(!hasEngine("chromium"))(
  "the eval page's links to the trials behind each number, in Chromium",
  () => {
    beforeAll(async () => {
      root = mkdtempSync(join(tmpdir(), "scifi-eval-page-links-"));
      ev = writeLinkedEval(root);
      file = writeEvalReport(ev.evalDir);
      browser = await launchChromium();
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      rmSync(root, { recursive: true, force: true });
    });

    it("no number in a stat table is left without a link to its trials or a reason", async () => {
      const { page, problems } = await openFile(browser, file);
      expect(problems).toEqual([]);
      expect(await page.locator("script").count()).toBe(0);
      for (const selector of STAT_TABLES) {
        const cells = await page.locator(selector).evaluateAll((tables) =>
          tables.flatMap((t) =>
            [...t.querySelectorAll("td.num, td.k")].map((td) => ({
              text: (td.textContent ?? "").trim(),
              linked: td.querySelector('a[href^="#set-"]') !== null,
              reason: td.querySelector(".no-trials[title]")?.getAttribute("title") ?? null,
            })),
          ),
        );
        expect(cells.length, selector).toBeGreaterThan(0);
        for (const c of cells) expect(c.linked || c.reason !== null, `${selector}: ${c.text}`).toBe(true);
      }
      // The top line, the flags and the comparisons' numbers link too.
      for (const selector of [
        "#eval-trials",
        "#eval-budget",
        "#flags tr.flagged",
        "#comparisons .muted",
        "#variant-comparisons .muted",
      ])
        expect(await page.locator(`${selector} a[href^="#set-"]`).count(), selector).toBeGreaterThan(0);
      await page.close();
    });

    it("every in-page link lands on an element; every trial in a list on its row", async () => {
      const { page } = await openFile(browser, file);
      const missing = await page.evaluate(() =>
        [...document.querySelectorAll('a[href^="#"]')]
          .map((a) => decodeURIComponent((a.getAttribute("href") ?? "").slice(1)))
          .filter((id) => document.getElementById(id) === null),
      );
      expect(missing).toEqual([]);
      const members = await page.evaluate(() =>
        [...document.querySelectorAll("section.trial-set .members a")].map((a) => {
          const target = document.getElementById((a.getAttribute("href") ?? "").slice(1));
          return {
            row: target?.matches("tr.trial") ?? false,
            trial: target?.getAttribute("data-trial") ?? "",
          };
        }),
      );
      expect(members.length).toBeGreaterThan(ev.results.length);
      expect(members.every((m) => m.row)).toBe(true);
      // Every trial that has a result is in some list.
      expect(new Set(members.map((m) => m.trial)).size).toBe(ev.results.length);
      await page.close();
    });

    it("a click on a number shows its list alone, on screen, without leaving the number; a trial in it goes to the row", async () => {
      const { page } = await openFile(browser, file);
      expect(await shownSets(page)).toEqual([]);
      const rate = page.locator("#totals-model tr").nth(1).locator("td.rate a");
      await rate.scrollIntoViewIfNeeded();
      const before = await page.evaluate(() => window.scrollY);
      const href = (await rate.getAttribute("href")) as string;
      await rate.click();
      expect(await shownSets(page)).toEqual([href.slice(1)]);
      const list = page.locator(href);
      const box = await list.boundingBox();
      const viewport = page.viewportSize() as { width: number; height: number };
      expect(box && box.y >= 0 && box.y + box.height <= viewport.height).toBe(true);
      // The list floats at the window's foot: the page stays where the number is.
      expect(await page.evaluate(() => window.scrollY)).toBe(before);
      // It lists the model's trials with a verdict: alpha's, none an error or impossible.
      const listed = await list
        .locator(".members a")
        .evaluateAll((as) => as.map((a) => a.getAttribute("href")));
      const expected = ev.results
        .filter((r) => r.model === "alpha" && r.status !== "error" && r.variant !== "impossible")
        .map((r) => `#trial-${r.trialId}`)
        .sort();
      expect([...listed].sort()).toEqual(expected);
      // Another number, another list; the first is hidden again.
      const usd = page.locator("#totals-model tr").nth(1).locator("td.per-pass a");
      const other = (await usd.getAttribute("href")) as string;
      expect(other).not.toBe(href);
      await usd.click();
      expect(await shownSets(page)).toEqual([other.slice(1)]);
      // Its close link hides it and leaves the page where it was; the number opens it again.
      const at = await page.evaluate(() => window.scrollY);
      await page.locator(`${other} a[href="#set-none"]`).click();
      expect(await shownSets(page)).toEqual([]);
      expect(await page.evaluate(() => window.scrollY)).toBe(at);
      await usd.click();
      expect(await shownSets(page)).toEqual([other.slice(1)]);
      // A trial in the list: its row is the target (highlighted), the list closes.
      const first = page.locator(`${other} .members a`).first();
      const trial = ((await first.getAttribute("href")) as string).slice(1);
      await first.click();
      expect(await shownSets(page)).toEqual([]);
      const row = page.locator(`tr[id="${trial}"]`);
      await expect(row.evaluate((r) => r.matches(":target"))).resolves.toBe(true);
      expect(await row.locator("a.run-report, .missing").count()).toBe(1);
      await page.close();
    });

    it("the flags and the comparisons come before the plots and every per-model table", async () => {
      const { page } = await openFile(browser, file);
      const top = async (selector: string) =>
        (await page.locator(selector).first().boundingBox())?.y ?? Number.NaN;
      const flags = await top("#flags");
      const unflagged = await top("#unflagged");
      const comparisons = await top("#comparisons");
      for (const later of [
        "#plot-rate-model",
        "#variant-tables",
        "#groups",
        "#totals-model",
        "#integrity-model",
        "#impossible-model",
        "#trials",
      ]) {
        const y = await top(later);
        expect(y, later).toBeGreaterThan(flags);
        expect(y, later).toBeGreaterThan(unflagged);
        expect(y, later).toBeGreaterThan(comparisons);
      }
      await page.close();
    });

    it("the iterations axis ticks at whole numbers where its dots lie; long names keep distinct labels", async () => {
      // The same eval with long model names that share their start.
      const input = loadEvalPageInput(ev.evalDir);
      const long = (m: string) => `anthropic:claude-sonnet-5-20260101-context-window-${m}`;
      const rename = <T extends { model: string }>(x: T): T => ({ ...x, model: long(x.model) });
      const summary = {
        ...input.summary,
        models: input.summary.models.map(long),
        byModel: input.summary.byModel.map(rename),
        groups: input.summary.groups.map(rename),
      };
      const trials = input.trials.map((t) => ({ ...t, result: rename(t.result) }));
      const named = join(root, "long-names.html");
      writeFileSync(named, renderEvalReport({ ...input, summary, trials }, ev.evalDir));
      const { page } = await openFile(browser, named);
      const ticks = await page
        .locator('#plot-iterations text.tick[text-anchor="end"]')
        .evaluateAll((ts) =>
          ts.map((t) => ({ label: t.textContent ?? "", y: Number(t.getAttribute("y")) - 4 })),
        );
      expect(ticks.map((t) => t.label)).toEqual(["0", "1", "2", "3"]);
      const dots = await page
        .locator("#plot-iterations circle.point")
        .evaluateAll((cs) =>
          cs.map((c) => ({ y: Number(c.getAttribute("cy")), title: c.textContent ?? "" })),
        );
      expect(dots.length).toBe(ev.results.length);
      for (const dot of dots) {
        const value = dot.title.match(/: (\d+) \(/)?.[1] as string;
        const tick = ticks.find((t) => t.label === value);
        expect(tick, dot.title).toBeDefined();
        expect(Math.abs((tick as { y: number }).y - dot.y), dot.title).toBeLessThan(0.5);
      }
      for (const id of ["plot-rate-model", "plot-iterations"]) {
        const labels = await page.locator(`#${id} text.tick[text-anchor="middle"]`).evaluateAll((ts) =>
          ts
            .filter((t) => t.querySelector("title"))
            .map((t) => {
              const b = (t as SVGTextElement).getBoundingClientRect();
              return { text: t.firstChild?.textContent ?? "", left: b.left, right: b.right };
            }),
        );
        expect(labels.length, id).toBe(3);
        expect(new Set(labels.map((l) => l.text)).size, id).toBe(3);
        for (let i = 1; i < labels.length; i++)
          expect((labels[i] as { left: number }).left, id).toBeGreaterThanOrEqual(
            (labels[i - 1] as { right: number }).right,
          );
      }
      await page.close();
    });
  },
);
