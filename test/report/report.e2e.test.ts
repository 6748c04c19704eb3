/// <reference lib="dom" />
// Reports of real runs (Docker sandbox, real checks, scripted models over HTTP) opened in real
// headless Chromium: a passed run (with a hostile tool output), a failed one and a blocked one.
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { writeRunReport } from "../../runner/report/report.ts";
import { runTask } from "../../runner/run/setup.ts";
import { type CliResult, runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, REPO, workspace } from "../run/harness.ts";
import { launchChromium, openFile } from "./browser.ts";
import { decodePng, distinctColors } from "./png.ts";

const HOSTILE_FIXTURE = join(REPO, "test", "report", "fixtures", "gfortran-pass-html.yaml");

interface Run {
  dir: string;
  page: string;
}

const runs: Record<"passed" | "failed" | "blocked", Run> = {} as Record<"passed" | "failed" | "blocked", Run>;
let home: string;
let browser: Browser;

/** One run of an example task under the shared home, with a scripted model. */
async function scriptedRun(example: string, script: string, iterations?: number): Promise<string> {
  const ws = workspace(example, iterations !== undefined ? { iterations } : {});
  const result = await runTask({
    home,
    task: ws.sam,
    backend: "docker",
    model: `scripted:${script}`,
    retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
  });
  return result.dir;
}

function cli(...args: string[]): Promise<CliResult> {
  return runScifi(home, args, 120_000);
}

/** Seq of the call whose tool input contains `text` (its tool output follows it on the page). */
function callWithTool(dir: string, text: string): number {
  const found = readTape(join(dir, "audit.jsonl")).find(
    (r) =>
      r.kind === "call" &&
      r.response?.content.some((b) => b.type === "tool_use" && JSON.stringify(b.input).includes(text)),
  );
  if (!found) throw new Error(`no call with a tool input containing '${text}'`);
  return found.seq;
}

describe.skipIf(!hasEngine("docker") || !hasEngine("chromium"))("run reports in headless Chromium", () => {
  beforeAll(async () => {
    ensureImage();
    home = join(mkdtempSync(join(tmpdir(), "scifi-report-e2e-")), "home");
    mkdirSync(home);
    const passed = await scriptedRun("gfortran-build-run", HOSTILE_FIXTURE);
    const failed = await scriptedRun("gfortran-build-run", fixture("gfortran-wrong-content.yaml"), 1);
    const blocked = await scriptedRun("verilator-counter-debug", fixture("verilator-failing.yaml"));
    // The passed run's page through the command line (by run id), the others through the library.
    const byId = await cli("report", passed.split("/").at(-1) ?? "");
    expect(byId.code).toBe(0);
    expect(byId.stdout.trim()).toBe(join(passed, "report.html"));
    runs.passed = { dir: passed, page: join(passed, "report.html") };
    for (const [name, dir] of [
      ["failed", failed],
      ["blocked", blocked],
    ] as const) {
      const page = join(dir, "report.html");
      writeRunReport(join(dir, "audit.jsonl"), page);
      runs[name] = { dir, page };
    }
    browser = await launchChromium();
  }, 1_800_000);

  afterAll(async () => {
    await browser?.close();
  });

  it.each(["passed", "failed", "blocked"] as const)(
    "the %s run's page loads with no console errors and no network request but itself",
    async (name) => {
      const { page, problems, requests } = await openFile(browser, runs[name].page);
      expect(problems).toEqual([]);
      expect(requests).toEqual([`file://${runs[name].page}`]);
      await expect(page.locator("h1 .status").textContent()).resolves.toBe(name);
      const calls = await page.locator("details.call").count();
      expect(calls).toBe(
        readTape(join(runs[name].dir, "audit.jsonl")).filter((r) => r.kind === "call").length,
      );
      await expect(page.locator("#fact-chain").textContent()).resolves.toMatch(/^verified/);
      await page.close();
    },
  );

  it("expanding a call shows its full text: the tool input and output exactly as on the tape", async () => {
    const { page } = await openFile(browser, runs.passed.page);
    const call = page.locator(`#call-${callWithTool(runs.passed.dir, "make clean && make -j4 && make run")}`);
    const output = call.locator(".tool pre").nth(1);
    expect(await output.isVisible()).toBe(false);
    await call.locator(":scope > summary").click();
    await output.waitFor({ state: "visible" });
    const tape = readTape(join(runs.passed.dir, "audit.jsonl"));
    const result = tape
      .flatMap((r) => (r.kind === "call" ? r.request.messages.flatMap((m) => m.content) : []))
      .find((b) => b.type === "tool_result" && b.content.includes("n        = 200"));
    expect(result?.type).toBe("tool_result");
    expect(await output.textContent()).toBe(result?.type === "tool_result" ? result.content : "");
    expect(await output.textContent()).toContain("n        = 200");
    await page.close();
  });

  it("the review verdict shows each Expectation item with the evidence the reviewer cited", async () => {
    const { page } = await openFile(browser, runs.failed.page);
    const rows = page.locator("table.verdicts tr");
    await expect(rows.count()).resolves.toBe(4);
    await expect(rows.nth(2).textContent()).resolves.toMatch(/^root\/e2.*fail/s);
    await expect(rows.nth(2).textContent()).resolves.toContain(
      "results/stats.txt holds a mean of 99, not the program's output",
    );
    // The compare stage that diffs results/stats.txt with the reference (its real exit code is shown to people).
    const checks = page.locator("table.checks tr[data-check='root/check-4']");
    await expect(checks.textContent()).resolves.toMatch(/failed exit 1/);
    await page.close();
  });

  it("the memory the run wrote is listed: the final review's group suggestion", async () => {
    const { page } = await openFile(browser, runs.blocked.page);
    const memory = page.locator("details.memory");
    await expect(memory.count()).resolves.toBeGreaterThanOrEqual(1);
    await expect(memory.first().textContent()).resolves.toContain(
      "Check the Verilator installation before running this task.",
    );
    await expect(memory.first().locator("summary").textContent()).resolves.toMatch(
      /^group rtl-debugging memory/,
    );
    await page.close();
  });

  it("the charts render: the chart area's screenshot is not blank", async () => {
    const { page } = await openFile(browser, runs.passed.page);
    await expect(page.locator("#chart-area svg[role=img]").count()).resolves.toBeGreaterThanOrEqual(3);
    const pixels = decodePng(await page.locator("#chart-area").screenshot());
    expect(pixels.width).toBeGreaterThan(400);
    // Bars, lines, axes and text: far more than the one colour of a blank area.
    expect(distinctColors(pixels)).toBeGreaterThan(20);
    await page.close();
  });

  it("search, role, tool and failed-call filters hide the rows that do not match", async () => {
    const { page } = await openFile(browser, runs.blocked.page);
    const all = await page.locator("details.call").count();
    const visible = () => page.locator("details.call:not([hidden])");
    await page.fill("#search", "--no-such-flag-2");
    await page.waitForFunction(
      () =>
        !document
          .getElementById("shown")
          ?.textContent?.startsWith(`${document.querySelectorAll("details.call").length} of`),
    );
    const found = await visible().count();
    expect(found).toBeGreaterThan(0);
    expect(found).toBeLessThan(all);
    // Bodies enter the DOM when a call opens: open each match and read it.
    for (const summary of await visible().locator(":scope > summary").all()) await summary.click();
    await page.waitForFunction(
      () =>
        document.querySelectorAll("details.call:not([hidden]) > .body").length ===
        document.querySelectorAll("details.call:not([hidden])").length,
    );
    for (const text of await visible().allTextContents()) expect(text).toContain("--no-such-flag-2");
    await page.fill("#search", "");
    await page.waitForFunction(
      (n) => document.querySelectorAll("details.call:not([hidden])").length === n,
      all,
    );
    await page.selectOption("#filter-role", "final_review");
    await expect(visible().count()).resolves.toBe(1);
    await page.selectOption("#filter-role", "");
    await page.selectOption("#filter-tool", "read_file");
    for (const tools of await visible().evaluateAll((els) =>
      els.map((e) => (e as HTMLElement).dataset.tools),
    ))
      expect(tools?.split(" ")).toContain("read_file");
    await page.selectOption("#filter-tool", "");
    await page.check("#filter-failed");
    const failed = await visible().evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.failed));
    expect(failed.length).toBeGreaterThanOrEqual(3); // three failing steps before the blocker
    expect(failed.every((f) => f === "1")).toBe(true);
    await expect(page.locator("#shown").textContent()).resolves.toBe(
      `${failed.length} of ${all} calls shown`,
    );
    await page.close();
  });

  it("a tool output with <script> and HTML is shown as text and never runs", async () => {
    const { page, problems } = await openFile(browser, runs.passed.page);
    const call = page.locator(`#call-${callWithTool(runs.passed.dir, "cat hostile.txt")}`);
    await call.locator(":scope > summary").click();
    const shown = call.locator(".tool pre").nth(1); // the tool's output
    await shown.waitFor({ state: "visible" });
    expect(await shown.textContent()).toMatch(
      /^exit code: 0\nstdout:\nHOSTILE-OUTPUT-START\n<script>window.pwned=1<\/script>\n/,
    );
    expect(await shown.textContent()).toContain('<img src=x onerror="window.pwned=2">');
    expect(await shown.textContent()).toContain("</pre></details><b>not bold</b>");
    expect(await page.evaluate(() => (window as unknown as { pwned?: unknown }).pwned)).toBeUndefined();
    expect(await page.locator("script").count()).toBe(1); // ours
    expect(await page.locator("img").count()).toBe(0);
    expect(await page.locator("b", { hasText: "not bold" }).count()).toBe(0);
    // The reviewer's evidence with angle brackets is text too.
    await expect(page.locator("table.verdicts").textContent()).resolves.toContain(
      "diff <expected> <actual> is empty",
    );
    // Search sees the text as the reader does.
    await page.fill("#search", "<script>window.pwned=1</script>");
    await page.waitForFunction(() => document.querySelectorAll("details.call[hidden]").length > 0);
    expect(await call.isHidden()).toBe(false);
    await expect(page.locator("details.call[data-role=prescan]").isHidden()).resolves.toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("scifi report --index lists the runs with state, cost and time, and links to each page", async () => {
    const runsDir = join(home, "runs");
    const index = await cli("report", "--index", runsDir);
    expect(index.code).toBe(0);
    expect(index.stdout).toContain("(3 runs, 0 run pages built)");
    const { page, problems, requests } = await openFile(browser, join(runsDir, "index.html"));
    expect(problems).toEqual([]);
    expect(requests).toHaveLength(1);
    const statuses = await page
      .locator("tr.run")
      .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.status));
    expect([...statuses].sort()).toEqual(["blocked", "failed", "passed"]);
    const hrefs = await page
      .locator("tr.run a")
      .evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href));
    for (const href of hrefs) expect(existsSync(new URL(href).pathname)).toBe(true);
    await page.locator("tr.run[data-status=blocked] a").click();
    await page.waitForURL(/report\.html$/);
    await expect(page.locator("h1 .status").textContent()).resolves.toBe("blocked");
    expect(readFileSync(join(runsDir, "index.html"), "utf8")).toContain("script-src 'none'");
    await page.close();
  });
});
