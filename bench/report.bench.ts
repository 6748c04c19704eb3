/// <reference lib="dom" />
// Report speed on a long run: a synthetic 2,000-call tape written through the audit tape writer
// (so it chains and verifies like a real one). Targets (issue 8): the report renders in under
// 10 s, and the page is interactive (DOMContentLoaded + the first search filter applied) in under
// 2 s in headless Chromium. Baselines in the same run: reading and summarising the tape (what
// `scifi audit stats` does), and Chromium loading a static page of the same size.
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { summarizeTape } from "../runner/audit/summary.ts";
import { readTape } from "../runner/audit/verify.ts";
import { runFiles } from "../runner/paths.ts";
import { writeRunReport } from "../runner/report/report.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { launchChromium } from "../test/report/browser.ts";
import { synthRun } from "../test/report/synth.ts";
import { scaled } from "./size.ts";

const CALLS = scaled(2_000, 50);

export async function run(): Promise<BenchResult[]> {
  const root = mkdtempSync(join(tmpdir(), "scifi-report-bench-"));
  try {
    const dir = synthRun(join(root, "runs"), "20261130-010000-bench-2000-calls", { calls: CALLS });
    const tape = runFiles(dir).audit;
    const page = join(dir, "report.html");

    const baselineStart = performance.now();
    summarizeTape(readTape(tape));
    const summariseMs = performance.now() - baselineStart;

    const renderStart = performance.now();
    const { model } = writeRunReport(tape, page);
    const renderMs = performance.now() - renderStart;
    if (model.summary.calls.length !== CALLS)
      throw new Error(`expected ${CALLS} calls, got ${model.summary.calls.length}`);

    const staticPage = join(root, "static.html");
    writeFileSync(staticPage, staticPageOfSize(statSync(page).size));
    const { interactiveMs, staticMs } = await measureBrowser(page, staticPage);
    const mb = (statSync(page).size / 2 ** 20).toFixed(1);
    return [
      {
        name: `render the report of a ${CALLS}-call tape`,
        value: renderMs,
        unit: "ms",
        baseline: summariseMs,
        maxValue: 10_000,
        note: `baseline: read + summarise the tape; tape ${(statSync(tape).size / 2 ** 20).toFixed(1)} MiB, page ${mb} MiB`,
      },
      {
        name: "page interactive in headless Chromium (DOMContentLoaded + first search filter)",
        value: interactiveMs,
        unit: "ms",
        baseline: staticMs,
        maxValue: 2_000,
        note: `baseline: a static page of the same size to DOMContentLoaded; load average ${loadavg()[0]?.toFixed(1)} (wall times stretch on a busy machine; the ratio does not)`,
      },
    ];
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

async function measureBrowser(
  report: string,
  staticPage: string,
): Promise<{ interactiveMs: number; staticMs: number }> {
  const browser = await launchChromium();
  try {
    // Warm the browser once so process start-up is not counted against either page.
    const warm = await browser.newPage();
    await warm.goto("about:blank");
    await warm.close();

    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const start = performance.now();
    await page.goto(`file://${report}`, { waitUntil: "domcontentloaded", timeout: 180_000 });
    const before = await page.evaluate(() => document.body.dataset.filtered ?? "");
    await page.fill("#search", "residual");
    await page.waitForFunction((b) => document.body.dataset.filtered !== b, before, { timeout: 180_000 });
    const interactiveMs = performance.now() - start;
    await page.close();

    const plain = await browser.newPage();
    const staticStart = performance.now();
    await plain.goto(`file://${staticPage}`, { waitUntil: "domcontentloaded", timeout: 180_000 });
    const staticMs = performance.now() - staticStart;
    await plain.close();
    return { interactiveMs, staticMs };
  } finally {
    await browser.close();
  }
}

/** Plain text in 80-character lines, as many bytes as the report: what the browser needs just to parse and lay out that much. */
function staticPageOfSize(bytes: number): string {
  const line = `${"residual 0.0123 ".repeat(5)}\n`;
  return `<!doctype html><meta charset="utf-8"><pre>${line.repeat(Math.ceil(bytes / line.length))}</pre>`;
}
