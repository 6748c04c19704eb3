// The report's data model and page, on a synthetic run folder written through the real tape writer.
// No engine needed: the browser tests are in report.e2e.test.ts.
import { createHash } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { renderStats, renderTranscript } from "../../runner/audit/render.ts";
import { summarizeTape } from "../../runner/audit/summary.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { runFiles } from "../../runner/paths.ts";
import { escapeHtml } from "../../runner/report/escape.ts";
import { renderReport } from "../../runner/report/html.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import { contentSecurityPolicy, pageAssets } from "../../runner/report/page.ts";
import { writeIndex } from "../../runner/report/report.ts";
import { synthRun } from "./synth.ts";

const HOSTILE = `<script>window.pwned=1</script>\n<img src=x onerror="window.pwned=2">\n</pre></details><b>bold</b>`;

let runs: string;
let dir: string;

beforeAll(() => {
  runs = join(mkdtempSync(join(tmpdir(), "scifi-report-")), "runs");
  dir = synthRun(runs, "20261130-010000-synthetic-fit-abc123", {
    calls: 81,
    workCallsPerIteration: 12,
    hostileOutput: HOSTILE,
  });
});

/** The text of the element with this id in the page (tags stripped, entities decoded). */
function fact(page: string, id: string): string {
  const match = new RegExp(`id="${id}">(.*?)</td>`).exec(page);
  if (!match?.[1]) throw new Error(`no #${id} in the page`);
  return match[1]
    .replace(/<[^>]+>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
}

describe("one data model for the terminal and the page", () => {
  it("the page's totals are the ones `scifi audit stats` prints", () => {
    const page = renderReport(buildReportModel(loadRun(runFiles(dir).audit)));
    const stats = renderStats(summarizeTape(readTape(runFiles(dir).audit)));
    const total =
      /^Total: (\d+) calls \| in (\d+), cache write (\d+), cache read (\d+), out (\d+), reasoning \d+ \| cache-read share ([\d.]+ %) \| (\$[\d.]+)/m.exec(
        stats,
      );
    expect(total).not.toBeNull();
    const [, calls, input, cacheWrite, cacheRead, output, share, cost] = total ?? [];
    expect(fact(page, "fact-calls")).toMatch(new RegExp(`^${calls} \\(`));
    expect(fact(page, "fact-tokens")).toBe(
      `input ${input}, cache write ${cacheWrite}, cache read ${cacheRead}, output ${output}`,
    );
    expect(fact(page, "fact-cache")).toBe(share);
    expect(fact(page, "fact-cost")).toBe(cost);
    expect(Number(calls)).toBe(81);
    expect(Number(cost?.slice(1))).toBeGreaterThan(0);
  });

  it("every call of the terminal transcript is a row of the page, in the same order", () => {
    const summary = summarizeTape(readTape(runFiles(dir).audit));
    const transcriptSeqs = [...renderTranscript(summary).matchAll(/^#(\d+) \S+ (\w+)/gm)]
      .filter((m) => m[2] !== "event" && m[2] !== "injected")
      .map((m) => Number(m[1]));
    const page = renderReport(buildReportModel(loadRun(runFiles(dir).audit)));
    const pageSeqs = [...page.matchAll(/<details class="call[^"]*" id="call-(\d+)"/g)].map((m) =>
      Number(m[1]),
    );
    expect(pageSeqs).toEqual(transcriptSeqs);
  });
});

describe("the model", () => {
  it("groups calls into iterations and phases, with tool results joined to their calls", () => {
    const model = buildReportModel(loadRun(runFiles(dir).audit));
    expect(model.status).toBe("passed");
    expect(model.timeline.map((i) => i.label)).toEqual([
      "iteration 1",
      "iteration 2",
      "iteration 3",
      "iteration 4",
      "iteration 5",
      "final review",
    ]);
    const first = model.timeline[0];
    expect(first?.phases.map((p) => p.name)).toEqual(["prescan", "work", "checks", "review"]);
    const work = first?.phases.find((p) => p.name === "work");
    expect(work?.calls).toHaveLength(12);
    expect(work?.calls[1]?.toolCalls[0]?.result?.content).toBe(HOSTILE);
    // The last work call's tool result was never sent back: the pass ended.
    expect(work?.calls[11]?.toolCalls[0]?.result).toBeUndefined();
    expect(work?.calls.filter((c) => c.failed)).toHaveLength(1); // step 11 returned an error
    // Each work call repeats the pass so far; the page shows only what is new.
    expect(work?.calls[3]?.previous).toMatchObject({ seq: work?.calls[2]?.summary.seq, sharedMessages: 5 });
    const review = first?.phases.find((p) => p.name === "review");
    expect(review?.verdicts[0]?.items[0]).toEqual({
      id: "root/e1",
      pass: false,
      evidence: "fit.txt chi2/ndf = 7.9",
    });
    expect(review?.verdicts[0]?.fixes).toEqual(["refit with the background term"]);
    expect(first?.phases.map((p) => p.durationMs)).toEqual([
      expect.any(Number),
      expect.any(Number),
      1500,
      expect.any(Number),
    ]);
    expect(model.charts.cacheShare).toHaveLength(81);
  });

  it("a broken chain is reported with the first bad line", () => {
    const copy = synthRun(join(runs, "..", "broken"), "run-broken", { calls: 10, workCallsPerIteration: 3 });
    const tape = runFiles(copy).audit;
    const lines = readFileSync(tape, "utf8").split("\n");
    lines[3] = lines[3]?.replace('"latencyMs":400', '"latencyMs":401') ?? "";
    writeFileSync(tape, lines.join("\n"));
    const model = buildReportModel(loadRun(tape));
    expect(model.chain).toMatchObject({ ok: false, line: 4 });
    const page = renderReport(model);
    expect(page).toContain("BROKEN at line 4</span>: hash does not match the content");
  });

  it("an injected memory text is found by its hash, and a changed file is said to be changed", () => {
    const copy = synthRun(join(runs, "..", "memory"), "run-memory", { calls: 10, workCallsPerIteration: 3 });
    const memory = runFiles(copy).memory;
    const entry = `<!-- scifi-entry run-memory/it1/review -->\n### Iteration 1 failed\n_2026-11-30T01:00:00Z · run run-memory · review_\n\nRefit with the background term.\n\n`;
    writeFileSync(memory, entry);
    const hash = createHash("sha256").update(entry).digest("hex");
    // The loop records the injection on the tape; here the record is appended through the writer.
    const tape = new AuditTape(runFiles(copy).audit, { runId: "run-memory" });
    tape.append({
      kind: "injected",
      role: "prescan",
      source: "memory",
      ref: "memory:task:run-memory",
      sha256: hash,
    });
    tape.append({
      kind: "injected",
      role: "prescan",
      source: "memory",
      ref: "memory:group:nowhere",
      sha256: hash,
    });
    const skill = readFileSync(new URL("../../skills/gfortran.md", import.meta.url), "utf8");
    const skillHash = createHash("sha256").update(skill).digest("hex");
    tape.append({
      kind: "injected",
      role: "work",
      source: "skill",
      ref: "skill:gfortran",
      sha256: skillHash,
    });
    tape.close();
    // A later entry does not hide the text that was injected (memory is append-only).
    appendFileSync(memory, entry.replaceAll("it1", "it2").replace("Iteration 1", "Iteration 2"));
    const model = buildReportModel(loadRun(runFiles(copy).audit));
    expect(model.injected[0]?.text).toBe(entry);
    expect(model.injected[1]?.missing).toMatch(/no text in .*nowhere\.md matches sha256/);
    expect(model.injected[2]?.text).toBe(skill); // a shipped skill, found by name and hash
    expect(model.memoryWritten.map((m) => m.title)).toEqual(["Iteration 1 failed", "Iteration 2 failed"]);
  });
});

describe("sandbox deaths", () => {
  it("each death is a note of its iteration, saying whose it was counted as", () => {
    const copy = synthRun(join(runs, "..", "deaths"), "run-deaths", { calls: 10, workCallsPerIteration: 3 });
    const history = runFiles(copy).history;
    const died = (deaths: number, inside: boolean) =>
      `${JSON.stringify({
        seq: 900 + deaths,
        time: "2026-11-30T01:00:00.000Z",
        type: "sandbox_died",
        iteration: 1,
        phase: "work",
        deaths,
        detail: `death <${deaths}>`,
        ...(inside ? { inside: true } : {}),
      })}\n`;
    appendFileSync(history, died(1, false) + died(2, true));
    const page = renderReport(buildReportModel(loadRun(runFiles(copy).audit)));
    expect(page).toContain("The work sandbox was killed from outside (death &lt;1&gt;)");
    expect(page).toContain(
      "The work sandbox ended under a command (death &lt;2&gt;); what ran in it may have ended it, so that command failed",
    );
  });
});

describe("escaping and the page policy", () => {
  it("tape text appears only escaped, and the policy allows no inline script but ours", () => {
    const page = renderReport(buildReportModel(loadRun(runFiles(dir).audit)));
    expect(page).not.toContain("<script>window.pwned");
    expect(page).not.toContain("<img src=x");
    // Call bodies travel gzip-compressed; inside, every run string is escaped once.
    const packed =
      /<textarea hidden disabled id="call-bodies" aria-hidden="true">([A-Za-z0-9+/=]*)<\/textarea>/.exec(
        page,
      )?.[1];
    const bodies = JSON.parse(gunzipSync(Buffer.from(packed ?? "", "base64")).toString("utf8")) as string[];
    expect(bodies).toHaveLength(81);
    const hostile = bodies.find((b) => b.includes("window.pwned=1"));
    expect(hostile).toContain(escapeHtml("<script>window.pwned=1</script>"));
    expect(hostile).not.toContain("<script>window.pwned");
    expect(hostile).not.toContain("<img src=x");
    expect(page.match(/<script>/g)).toHaveLength(1);
    const policy = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(page)?.[1] ?? "";
    expect(policy).toContain("default-src 'none'");
    expect(policy).not.toContain("unsafe-inline");
    const js = pageAssets().js;
    const digest = createHash("sha256").update(js).digest("base64");
    expect(policy).toContain(`script-src 'sha256-${digest}'`);
    expect(contentSecurityPolicy({ css: "x" })).toContain("script-src 'none'");
  });

  it("escapes every special character", () => {
    expect(escapeHtml(`<a href="x" onclick='y'>&amp;</a>`)).toBe(
      "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;",
    );
  });

  it("the index lists each run with a relative link and builds the missing run pages", () => {
    const result = writeIndex(runs, join(runs, "index.html"));
    expect(result.rows.map((r) => r.runId)).toEqual(["20261130-010000-synthetic-fit-abc123"]);
    expect(result.built).toBe(1);
    const index = readFileSync(join(runs, "index.html"), "utf8");
    expect(index).toContain('href="./20261130-010000-synthetic-fit-abc123/report.html"');
    expect(readFileSync(join(dir, "report.html"), "utf8")).toContain('<h2 id="timeline">');
    // Fresh pages are not rebuilt.
    expect(writeIndex(runs, join(runs, "index.html")).built).toBe(0);
  });
});
