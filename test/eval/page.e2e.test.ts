/// <reference lib="dom" />
// The eval report page in real headless Chromium (Debian's, like the run report's tests): it loads
// with no console error and no request but itself, the plots are drawn, hostile names show as text,
// and every run-report link resolves to the trial's report.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderEvalReport, writeEvalReport } from "../../runner/eval/page.ts";
import { loadEvalPageInput } from "../../runner/eval/page-load.ts";
import { hasEngine } from "../helpers/engines.ts";
import { launchChromium, openFile } from "../report/browser.ts";
import { type EvalFixture, HOSTILE_CAUSE, MODEL_A, MODEL_B, TASK, writeEvalFixture } from "./page-fixture.ts";

let root: string;
let fx: EvalFixture;
let file: string;
let browser: Browser;

describe.skipIf(!hasEngine("chromium"))("the eval report page in headless Chromium", () => {
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "scifi-eval-page-e2e-"));
    fx = writeEvalFixture(root);
    file = writeEvalReport(fx.evalDir);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("renders with no console error, no script and no request but the page itself", async () => {
    const { page, problems, requests } = await openFile(browser, file);
    expect(problems).toEqual([]);
    expect(requests).toEqual([`file://${file}`]);
    await expect(page.locator("h1").textContent()).resolves.toBe("Eval e-20261201-fixture");
    expect(await page.locator("script").count()).toBe(0);
    // Hostile names are text on the page, not markup.
    expect(await page.locator("img").count()).toBe(0);
    await expect(page.locator("#groups tr.group td").first().textContent()).resolves.toBe(TASK);
    await expect(page.locator('tr.trial[data-trial="fit.nl.b.r1"] td').nth(6).textContent()).resolves.toBe(
      HOSTILE_CAUSE,
    );
    await expect(page.locator("#totals-model tr").nth(2).locator("td").first().textContent()).resolves.toBe(
      MODEL_B,
    );
    await expect(page.locator("#totals-model tr").nth(1).locator("td").first().textContent()).resolves.toBe(
      `${MODEL_A}scripted`,
    );
    await page.close();
  });

  it("draws every plot with its marks, laid out on the page", async () => {
    const { page } = await openFile(browser, file);
    const marks = {
      "plot-rate-model": ".errorbar",
      "plot-rate-variant": ".errorbar",
      "plot-cost-rate": "circle.point",
      "plot-iterations": "circle.point",
      "plot-pareto": "circle.point",
    };
    const counts: Record<string, number> = {};
    for (const [id, mark] of Object.entries(marks)) {
      const svg = page.locator(`#${id} > svg`);
      const box = await svg.boundingBox();
      expect(box?.width, id).toBeGreaterThan(100);
      expect(box?.height, id).toBeGreaterThan(100);
      counts[id] = await page.locator(`#${id} ${mark}`).count();
    }
    expect(counts).toEqual({
      "plot-rate-model": 2,
      "plot-rate-variant": 1,
      "plot-cost-rate": 2,
      "plot-iterations": 5,
      "plot-pareto": 2,
    });
    // A bar's height is the rate: model A (100 %) twice model B's (50 %).
    const heights = await page
      .locator("#plot-rate-model rect[opacity]")
      .evaluateAll((rects) => rects.map((r) => Number(r.getAttribute("height"))));
    expect(heights[0]).toBeCloseTo(2 * (heights[1] ?? 0), 0);
    await page.close();
  });

  it("at 1,280 px the tables fit without scrolling sideways, and the comparisons come first", async () => {
    // The fixture with long names (no break in them) and 10 repeats' pass@k in every cell.
    const input = loadEvalPageInput(fx.evalDir);
    const long = (m: string) => `${m}-${"x".repeat(70)}`;
    const tens = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [String(i + 1), 0.5]));
    const summary = {
      ...input.summary,
      models: input.summary.models.map(long),
      groups: input.summary.groups.map((g) => ({
        ...g,
        model: long(g.model),
        task: long(g.task),
        passAtK: tens,
        passHatK: tens,
      })),
    };
    const wide = join(root, "wide.html");
    writeFileSync(wide, renderEvalReport({ ...input, summary }, fx.evalDir));
    const { page } = await openFile(browser, wide);
    await page.setViewportSize({ width: 1280, height: 900 });
    for (const selector of ["#groups", "#variant-tables table", "#totals-model"]) {
      const widths = await page
        .locator(selector)
        .evaluateAll((els) => els.map((e) => [e.scrollWidth, (e.parentElement as HTMLElement).clientWidth]));
      expect(widths.length, selector).toBeGreaterThan(0);
      for (const [table, room] of widths) expect(table, selector).toBeLessThanOrEqual(room as number);
    }
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    const top = async (selector: string) => (await page.locator(selector).boundingBox())?.y ?? Infinity;
    expect(await top("#comparisons")).toBeLessThan(await top("#plot-rate-model"));
    await page.close();
  });

  it("every run-report link resolves to that trial's report", async () => {
    const { page } = await openFile(browser, file);
    const hrefs = await page
      .locator("a.run-report")
      .evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href));
    expect(hrefs).toHaveLength(2);
    for (const href of hrefs) {
      expect(href.startsWith("file://")).toBe(true);
      expect(existsSync(fileURLToPath(href)), href).toBe(true);
    }
    expect(hrefs.map((h) => fileURLToPath(h)).sort()).toEqual(
      [join(fx.runs.a0, "report.html"), join(fx.runs.b0, "report.html")].sort(),
    );
    await page.locator('tr.trial[data-trial="fit.nl.a.r0"] a.run-report').click();
    await page.waitForURL(/run-a0\/report\.html$/);
    await expect(page.title()).resolves.toBe("run report run-a0");
    await page.close();
  });
});
