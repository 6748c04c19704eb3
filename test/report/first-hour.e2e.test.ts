// A failing scripted run as a new user reads it (real `scifi run`, Docker, real headless Chromium):
// the terminal's last lines and the report's header say which check failed, its command and its
// output, and which item the review failed and why; the verdict says which part failed; the page
// and the index say the run was scripted; a write_file's content reads as text, not escaped JSON.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, workspace } from "../run/harness.ts";
import { launchChromium, openFile } from "./browser.ts";

let browser: Browser;
let run: CliResult;
let reportPage: string;
let indexPage: string;

describe.skipIf(!hasEngine("docker"))(
  "a failed run, read first thing (docker, Chromium)",
  { timeout: 300_000 },
  () => {
    beforeAll(async () => {
      ensureImage();
      const ws = workspace("root-gaussian-fit", { iterations: 1 });
      run = await runScifi(
        ws.home,
        ["run", ws.sam, "--model", `scripted:${fixture("gaussian-fail.yaml")}`],
        240_000,
      );
      reportPage = /^report: (\S+)/m.exec(run.stdout)?.[1] ?? "";
      indexPage = join(ws.home, "runs", "index.html");
      browser = await launchChromium();
    }, 1_800_000);

    afterAll(async () => {
      await browser?.close();
    });

    it("the terminal's last lines name the failed check, its command and output, and the failed item", () => {
      expect(run.code).toBe(1);
      const lines = run.stdout.trimEnd().split("\n");
      const verdict = lines.findIndex((l) => l.startsWith("FAILED: "));
      expect(verdict).toBeGreaterThanOrEqual(0);
      expect(lines.length - verdict).toBeLessThanOrEqual(10);
      expect(lines[verdict]).toContain("[SCRIPTED model: replies come from");
      // Folded at 80 columns, the row it adds marked `  + ` (a38d: no soft-wrapped row unmarked).
      expect(lines[verdict + 1]?.length).toBeLessThanOrEqual(80);
      expect(`${lines[verdict + 1]}${lines[verdict + 2]?.replace(/^ {2}\+ /, "")}`).toBe(
        "failed check root/check-2 (iteration 1, exit 1): python3 checks/check_fit.py outputs/fit.json data/histogram.csv",
      );
      expect(lines[verdict + 3]).toMatch(/^ {2}\| FAIL: sigma \d\.\d+ differs from the histogram RMS/);
      expect(lines).toContain("review failed root/e1 (iteration 1): sigma is off by half");
      expect(run.stdout).toMatch(/^run \S+: 1 iteration, /m);
    });

    it("the report's header shows the cause first, the verdict says which part failed, and scripted", async () => {
      const { page, problems } = await openFile(browser, reportPage);
      expect(problems).toEqual([]);
      await expect(page.locator("h1 #scripted").textContent()).resolves.toBe("scripted");
      const box = page.locator("header #failure");
      await expect(box.isVisible()).resolves.toBe(true);
      // Above the facts table: read before anything else.
      const boxTop = (await box.boundingBox())?.y ?? Number.POSITIVE_INFINITY;
      const factsTop = (await page.locator("header table.facts").boundingBox())?.y ?? 0;
      expect(boxTop).toBeLessThan(factsTop);
      const check = box.locator(".failed-check[data-check='root/check-2']");
      await expect(check.locator("code").textContent()).resolves.toBe(
        "python3 checks/check_fit.py outputs/fit.json data/histogram.csv",
      );
      await expect(check.locator("pre.tail").textContent()).resolves.toMatch(
        /^FAIL: sigma .* differs from the histogram RMS/,
      );
      await expect(box.locator("li[data-item='root/e1']").textContent()).resolves.toBe(
        "root/e1: sigma is off by half",
      );
      await expect(page.locator(".verdict .verdict-why").first().textContent()).resolves.toBe(
        "the checks failed; the review failed root/e1",
      );
      // write_file's content as the file's lines, not one escaped JSON string.
      const call = page.locator("details.call[data-tools~='write_file']").first();
      await call.locator(":scope > summary").click();
      const write = call.locator(".tool[data-tool='write_file']").first();
      await write.waitFor({ state: "visible" });
      const content = await write.locator("pre").nth(1).textContent();
      expect(content).toContain('import json\nimport matplotlib; matplotlib.use("Agg")\n');
      await page.close();
    });

    it("the index says the run is scripted", async () => {
      const { page, problems } = await openFile(browser, indexPage);
      expect(problems).toEqual([]);
      const row = page.locator("#task-runs tr.run").first();
      await expect(row.locator(".status.failed").textContent()).resolves.toBe("failed");
      await expect(row.locator(".scripted").textContent()).resolves.toBe("scripted");
      expect(readFileSync(indexPage, "utf8")).not.toContain("still running");
      await page.close();
    });
  },
);
