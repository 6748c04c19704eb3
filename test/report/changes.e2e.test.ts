/// <reference lib="dom" />
// The Changes section of a real run's report (Docker sandbox, scripted model, the real CLI): the run
// writes fit.png and fit.pdf with matplotlib in the sandbox, edits notes.txt, deletes old.log and
// writes files whose names and contents are HTML (one of them Python). `scifi run` writes report.html
// itself and prints its path; the page, opened in real headless Chromium, shows the diffs (Python
// syntax-highlighted), the plot inline, the PDF's first page (rendered by pdftoppm in a sandbox at
// the run's end) inline, and the hostile files as text, with no request but the page itself.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, REPO } from "../run/harness.ts";
import { launchChromium, openFile } from "./browser.ts";

const SCRIPT = join(REPO, "test", "report", "fixtures", "matplotlib-plot.yaml");
const HOSTILE = "<img src=x onerror=alert(1)>.txt";
const HOSTILE_PY = '"><svg onload=alert(1)>.py';

const SAM = `---
name: decay-plot
walltime: 10m
iterations: 1
budget_usd: 0.50
---
# Plot a decay

## Context
\`data.txt\` holds \`t,counts\` pairs.

## To-do
Plot the counts against time into \`fit.png\` with matplotlib; write the fitted slope to \`results.txt\`.

## Expectation
- \`fit.png\` is a PNG image.
  \`\`\`check timeout=1m
  python3 -c "import sys; ok = open('fit.png','rb').read(8) == bytes([137,80,78,71,13,10,26,10]); print('png-magic', ok); sys.exit(0 if ok else 1)"
  \`\`\`
`;

let home: string;
let taskDir: string;
let run: CliResult;
let jsonRun: CliResult;
/** What a terminal that reports its size as 0x0 showed. */
let zeroTty: string;
let browser: Browser;

describe.skipIf(!hasEngine("docker") || !hasEngine("chromium"))("the Changes section of a real run", () => {
  beforeAll(async () => {
    ensureImage();
    const root = mkdtempSync(join(tmpdir(), "scifi-changes-e2e-"));
    home = join(root, "home");
    taskDir = join(root, "task");
    mkdirSync(home);
    mkdirSync(taskDir);
    writeFileSync(join(taskDir, "task.md"), SAM);
    writeFileSync(join(taskDir, "data.txt"), "0,100\n1,60\n2,36\n3,22\n4,13\n");
    writeFileSync(join(taskDir, "notes.txt"), "line one\nstatus: draft\nline three\n");
    writeFileSync(join(taskDir, "old.log"), "stale\n");
    run = await runScifi(home, ["run", taskDir, "--model", `scripted:${SCRIPT}`], 600_000);
    // The same task again in a fresh folder, with --json.
    const second = join(root, "task2");
    mkdirSync(second);
    writeFileSync(join(second, "task.md"), SAM);
    writeFileSync(join(second, "data.txt"), "0,100\n1,60\n");
    writeFileSync(join(second, "notes.txt"), "status: draft\n");
    writeFileSync(join(second, "old.log"), "stale\n");
    jsonRun = await runScifi(home, ["run", second, "--json", "--model", `scripted:${SCRIPT}`], 600_000);
    // Once more under a pseudo-terminal whose size is 0x0.
    const third = join(root, "task3");
    mkdirSync(third);
    writeFileSync(join(third, "task.md"), SAM);
    writeFileSync(join(third, "data.txt"), "0,100\n1,60\n");
    writeFileSync(join(third, "notes.txt"), "status: draft\n");
    writeFileSync(join(third, "old.log"), "stale\n");
    const command = `stty rows 0 cols 0; ${process.execPath} ${join(REPO, "bin", "scifi.js")} run ${third} --model scripted:${SCRIPT} </dev/null`;
    zeroTty = execFileSync("script", ["-qec", command, "/dev/null"], {
      env: { ...process.env, SCIFI_HOME: home },
      encoding: "utf8",
      timeout: 600_000,
    });
    browser = await launchChromium();
  }, 1_800_000);

  afterAll(async () => {
    await browser?.close();
  });

  it("scifi run writes the report itself and prints its path", () => {
    expect(run.stderr + run.stdout).toContain("PASSED");
    expect(run.code).toBe(0);
    const line = run.stdout.split("\n").find((l) => l.startsWith("report: "));
    expect(line).toMatch(/report: .*\/runs\/[^/]+\/report\.html \(all runs: .*\/runs\/index\.html\)/);
    const file = (line ?? "").slice("report: ".length).split(" (")[0] ?? "";
    expect(readFileSync(file, "utf8")).toContain('id="changes"');
  });

  it("piped progress says each check's and the review's result", () => {
    expect(run.stderr).toMatch(/iteration 1 check root\/\S+ passed \(exit 0\)/);
    expect(run.stderr).toMatch(/iteration 1 review of root passed/);
  });

  it("a terminal of size 0x0 gets progress lines, not a blank block", () => {
    expect(zeroTty).toMatch(/iteration 1 phase work node root/);
    expect(zeroTty).toMatch(/check root\/\S+ passed \(exit 0\)/);
    expect(zeroTty).toContain("PASSED");
  });

  it("scifi run --json prints one JSON summary on stdout and nothing else", () => {
    expect(jsonRun.code).toBe(0);
    const lines = jsonRun.stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0] as string);
    expect(summary).toMatchObject({ verdict: "passed", exitCode: 0, iterations: 1, scripted: true });
    expect(typeof summary.tokens).toBe("number");
    expect(typeof summary.usd).toBe("number");
    expect(summary.paths.report).toBe(join(summary.paths.records, "report.html"));
    expect(readFileSync(summary.paths.report, "utf8")).toContain('id="changes"');
    expect(jsonRun.stderr).toContain("PASSED");
  });

  it("the page lists what changed, shows the diff and the plot inline, and keeps hostile text as text", async () => {
    const file = (run.stdout.split("\n").find((l) => l.startsWith("report: ")) ?? "")
      .slice("report: ".length)
      .split(" (")[0] as string;
    const { page, problems, requests } = await openFile(browser, file);
    expect(problems).toEqual([]);
    // Offline: nothing is fetched but the page (the plot is a data: URI inside it).
    expect(requests.filter((r) => !r.startsWith("data:"))).toEqual([`file://${file}`]);
    const overall = page.locator("#changes .change-set").first();
    const row = (path: string) => overall.locator(`table.changes tr[data-path="${path}"]`);
    await expect(row("fit.png").textContent()).resolves.toContain("created");
    await expect(row("plot.py").textContent()).resolves.toContain("created");
    await expect(row("results.txt").textContent()).resolves.toContain("created");
    await expect(row("notes.txt").textContent()).resolves.toContain("changed");
    await expect(row("old.log").textContent()).resolves.toContain("deleted");
    await expect(row("data.txt").count()).resolves.toBe(0);
    // The diff of notes.txt: the old line removed, the new one added, context kept.
    const notes = overall.locator('details.change-file[data-path="notes.txt"]');
    await expect(notes.locator("tr.del").textContent()).resolves.toContain("-status: draft");
    await expect(notes.locator("tr.add").textContent()).resolves.toContain("+status: final: slope=-4.006");
    await expect(notes.locator("tr.ctx").first().textContent()).resolves.toContain("line one");
    // The plot is shown, decoded by the browser (a real PNG with pixels).
    const img = overall.locator('details.change-file[data-path="fit.png"] img.produced');
    await expect(img.isVisible()).resolves.toBe(true);
    const size = await img.evaluate((el) => [
      (el as HTMLImageElement).naturalWidth,
      (el as HTMLImageElement).naturalHeight,
    ]);
    expect(size[0]).toBeGreaterThan(100);
    expect(size[1]).toBeGreaterThan(100);
    // The PDF's first page, inline and labelled, decoded by the browser (800 pixels wide).
    await expect(row("fit.pdf").textContent()).resolves.toContain("created");
    const pdf = overall.locator('details.change-file[data-path="fit.pdf"] figure.pdf-page');
    await expect(pdf.locator("figcaption").textContent()).resolves.toContain("First page of the PDF");
    await expect(pdf.locator("img").isVisible()).resolves.toBe(true);
    const pageSize = await pdf
      .locator("img")
      .evaluate((el) => [(el as HTMLImageElement).naturalWidth, (el as HTMLImageElement).naturalHeight]);
    expect(pageSize).toEqual([800, 600]);
    // plot.py is highlighted as Python: keywords, strings, comments, numbers as highlight.js spans,
    // the diff marks and line numbers kept.
    const plot = overall.locator('details.change-file[data-path="plot.py"] table.diff[data-lang="python"]');
    await expect(plot.locator("span.hljs-keyword").first().textContent()).resolves.toBe("import");
    await expect(plot.locator("span.hljs-string").count()).resolves.toBeGreaterThan(3);
    await expect(plot.locator("span.hljs-comment").textContent()).resolves.toBe("# the fitted slope");
    await expect(plot.locator("span.hljs-number").count()).resolves.toBeGreaterThan(0);
    await expect(plot.locator("tr.add").first().textContent()).resolves.toBe("1+import matplotlib");
    const color = await plot
      .locator("span.hljs-keyword")
      .first()
      .evaluate((el) => getComputedStyle(el).color);
    expect(color).not.toBe(
      await plot
        .locator("tr.add pre")
        .first()
        .evaluate((el) => getComputedStyle(el).color),
    );
    // The hostile names and contents are text: no element was injected, no script ran.
    await expect(row(HOSTILE).locator("code").textContent()).resolves.toBe(HOSTILE);
    await expect(
      overall.locator(`table.changes tr[data-path='${HOSTILE_PY}'] code`).textContent(),
    ).resolves.toBe(HOSTILE_PY);
    const hostilePy = overall.locator(
      `details.change-file[data-path='${HOSTILE_PY}'] table.diff[data-lang="python"]`,
    );
    await expect(hostilePy.locator("tr.add").first().textContent()).resolves.toBe(
      '1+x = "</script><img src=x onerror=alert(2)>"  # <b>bold</b>',
    );
    await expect(hostilePy.locator("span.hljs-string").first().textContent()).resolves.toBe(
      '"</script><img src=x onerror=alert(2)>"',
    );
    await expect(hostilePy.locator("span.hljs-keyword").first().textContent()).resolves.toBe("def");
    await expect(page.locator("#changes svg").count()).resolves.toBe(0);
    await expect(page.locator("#changes img:not(.produced)").count()).resolves.toBe(0);
    const sources = await page
      .locator("#changes img")
      .evaluateAll((els) => els.map((el) => (el as HTMLImageElement).getAttribute("src")?.slice(0, 22)));
    expect(sources.sort()).toEqual(["data:image/png;base64,", "data:image/png;base64,"]);
    const hostile = overall.locator(`details.change-file[data-path="${HOSTILE}"]`);
    await expect(hostile.locator("tr.add").textContent()).resolves.toContain(
      "</pre><script>document.title='pwned'</script><b>bold</b>",
    );
    await expect(page.locator("#changes b").count()).resolves.toBe(0);
    await expect(page.locator("#changes script").count()).resolves.toBe(0);
    await expect(page.title()).resolves.not.toBe("pwned");
    // The search box finds text in check output too (every iteration's).
    await page.locator("#search").fill("png-magic true");
    await expect.poll(() => page.locator("tr[data-check].match").count()).toBe(1);
    await expect.poll(() => page.locator("#shown").textContent()).toContain("1 check output(s) match");
    // Per iteration too: the work pass of iteration 1 created the plot.
    await page.locator(".changes-iterations > summary").click();
    await expect(page.locator(".changes-iterations").textContent()).resolves.toContain("iteration 1");
    await expect(
      page.locator('.changes-iterations table.changes tr[data-path="fit.png"]').textContent(),
    ).resolves.toContain("created");
    await page.close();
  });
});
