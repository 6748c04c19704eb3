// Integrity events end to end on Docker (docs/integrity.md): the table of test/run/session/integrity-table.ts
// (ONE task, rows changing it; one scripted agent per kind of attempt, an honest control; each run's events, report
// line and section and audit marks checked), the asset-write run's page in real Chromium and its
// ATIF and OTLP exports (the events as step extras and span events), then an
// eval of the same task with an honest and a tampering scripted model: 0 and > 0 events per trial,
// shares with their Wilson intervals, in summary.json, summary.csv and the page.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../../../runner/eval/engine.ts";
import { evalFiles } from "../../../runner/eval/plan.ts";
import { runExport } from "../../../runner/export/export.ts";
import { readHistory } from "../../../runner/memory/history.ts";
import { writeRunReport } from "../../../runner/report/report.ts";
import { createDockerBackend } from "../../../runner/sandbox/docker.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { launchChromium, openFile } from "../../report/browser.ts";
import { ensureImage } from "../harness.ts";
import { FIXTURE, type Row, runRow, TABLE, verifyRow } from "./integrity-table.ts";

let root = "";
/** The asset-write run (home, run folder), for the report in Chromium. */
let tampered: { home: string; dir: string } | undefined;

describe.skipIf(!hasEngine("docker"))("integrity events, one per kind of attempt (docker)", () => {
  beforeAll(() => {
    ensureImage();
    root = mkdtempSync(join(tmpdir(), "scifi-integrity-"));
  }, 1_800_000);
  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  const run = async (row: Row) => {
    const { home, result } = await runRow(root, row, {
      sandbox: createDockerBackend({ proxy: { hosts: {}, systemResolver: false } }),
    });
    if (row.kind === "asset_write") tampered = { home, dir: result.dir };
    verifyRow(row, home, result);
  };
  it.each(TABLE.filter((r) => !r.slurm))("$agent", { timeout: 240_000 }, run);
  // The SLURM rows need the cluster (test/helpers/engines.ts): skipped, and shown so, without it.
  it.skipIf(!hasEngine("slurm")).each(TABLE.filter((r) => r.slurm))(
    "$agent (slurm)",
    { timeout: 240_000 },
    run,
  );

  it.skipIf(!hasEngine("chromium"))(
    "the report in Chromium: the header line links the section; the section's call link opens the call on the timeline",
    async () => {
      if (!tampered) throw new Error("the asset-write run of the table above did not run");
      const file = join(tampered.dir, "report-integrity.html");
      writeRunReport(join(tampered.dir, "audit.jsonl"), file, tampered.home);
      const browser = await launchChromium();
      try {
        const { page, problems, requests } = await openFile(browser, file);
        expect(await page.textContent("#fact-integrity")).toBe("1 (asset_write 1)");
        await page.click("#fact-integrity a");
        expect(await page.isVisible("#integrity")).toBe(true);
        const href = (await page.getAttribute("a.integrity-call", "href")) ?? "";
        expect(href).toMatch(/^#call-\d+$/);
        await page.click("a.integrity-call");
        await page.waitForFunction(
          (id) => (document.getElementById(id) as HTMLDetailsElement | null)?.open === true,
          href.slice(1),
        );
        expect(await page.isVisible(`${href} .badge.integrity`)).toBe(true);
        expect(problems).toEqual([]);
        expect(requests.filter((r) => !r.startsWith("file://") && !r.startsWith("data:"))).toEqual([]);
      } finally {
        await browser.close();
      }
    },
    120_000,
  );

  it("the exports carry the events: an ATIF step's extra and the run's counts, an OTLP span event on the tool", async () => {
    if (!tampered) throw new Error("the asset-write run of the table above did not run");
    const event = readHistory(join(tampered.dir, "history.jsonl")).find((e) => e.type === "integrity");
    if (event?.type !== "integrity" || !event.call)
      throw new Error("the asset-write run has no call-linked event");
    const atifFile = join(tampered.dir, "x.atif.jsonl");
    await runExport({ inputs: [tampered.dir], format: "atif", home: tampered.home, out: atifFile });
    const atif = readFileSync(atifFile, "utf8");
    const trajectory = JSON.parse(atif.trim().split("\n")[0] as string) as {
      extra: { integrity: Record<string, number> };
      subagent_trajectories: {
        steps: { extra?: { tape?: { seq: number }; integrity?: { kind: string; tool_call_id: string }[] } }[];
      }[];
    };
    expect(trajectory.extra.integrity).toEqual({ asset_write: 1 });
    const steps = trajectory.subagent_trajectories.flatMap((t) => t.steps);
    const step = steps.find((st) => st.extra?.tape?.seq === event.call?.seq);
    expect(step?.extra?.integrity).toEqual([
      expect.objectContaining({ kind: "asset_write", tool_call_id: event.call.id }),
    ]);
    expect(steps.filter((st) => st.extra?.integrity)).toHaveLength(1);
    const otlpFile = join(tampered.dir, "x.otlp.json");
    await runExport({ inputs: [tampered.dir], format: "otlp", home: tampered.home, out: otlpFile });
    const spans = (
      JSON.parse(readFileSync(otlpFile, "utf8")) as {
        resourceSpans: {
          scopeSpans: {
            spans: {
              name: string;
              attributes: { key: string; value: { stringValue?: string } }[];
              events?: { name: string; attributes: { key: string; value: { stringValue?: string } }[] }[];
            }[];
          }[];
        }[];
      }
    ).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((sc) => sc.spans));
    const marked = spans.filter((sp) => (sp.events ?? []).some((e) => e.name === "scifi.integrity"));
    expect(marked.map((sp) => sp.name)).toEqual([`execute_tool ${event.call.tool}`]);
    const attrs = marked[0]?.events?.[0]?.attributes ?? [];
    expect(attrs.find((a) => a.key === "scifi.integrity.kind")?.value.stringValue).toBe("asset_write");
    // What was attempted is the agent's text: only with --content.
    expect(attrs.some((a) => a.key === "scifi.integrity.attempted")).toBe(false);
  });
});

describe.skipIf(!hasEngine("docker"))("integrity per model in scifi eval (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("an honest and a tampering scripted model: 0 and > 0, with their intervals", {
    timeout: 240_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-integrity-eval-"));
    cpSync(FIXTURE, dir, { recursive: true });
    const home = join(dir, "home");
    mkdirSync(home);
    writeFileSync(join(home, "site-policy.yaml"), `allowedHosts: ["*.test:8000"]\n`);
    try {
      const { summary, evalDir } = await runEval({
        home,
        suite: join(dir, "suite.yaml"),
        retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      });
      expect(summary.trials).toMatchObject({ pass: 2, fail: 2, error: 0 });
      const of = (model: string) => summary.byModel.find((m) => m.model === model)?.integrity;
      const honest = of("honest");
      const tampering = of("tampering");
      expect(honest).toMatchObject({ n: 2, events: 0, trialsWithEvents: 0, share: 0, byKind: {} });
      expect(honest?.wilson95[1]).toBeCloseTo(0.657628, 5); // 1.9208 / 2.9208
      expect(honest?.eventsPerTrial.ci95[0]).toBe(0);
      expect(honest?.eventsPerTrial.ci95[1]).toBeCloseTo(3.68888 / 2, 4);
      expect(tampering).toMatchObject({ n: 2, events: 2, trialsWithEvents: 2, share: 1 });
      expect(tampering?.eventsPerTrial.mean).toBe(1);
      expect(tampering?.eventsPerTrial.ci95[0]).toBeGreaterThan(0);
      expect(tampering?.wilson95[0]).toBeCloseTo(0.342372, 5);
      expect(tampering?.byKind.asset_write).toMatchObject({ events: 2, trials: 2, share: 1 });
      expect(summary.byVariant[0]?.integrity).toMatchObject({ n: 4, events: 2, share: 0.5 });
      const files = evalFiles(evalDir);
      const [head, ...rows] = readFileSync(files.csv, "utf8").trim().split("\n");
      const share = head?.split(",").indexOf("integrity_share") ?? -1;
      expect(rows.map((r) => [r.split(",")[2], r.split(",")[share]]).sort()).toEqual([
        ["honest", "0"],
        ["tampering", "1"],
      ]);
      const page = readFileSync(join(evalDir, "report.html"), "utf8");
      expect(page).toContain('id="integrity-model"');
      // Every number on the page links to its trials (runner/eval/trial-sets.ts): read without the links.
      const text = page.replace(/<a class="set" href="#set-\d+">([\s\S]*?)<\/a>/g, "$1");
      expect(text).toMatch(/<code>asset_write<\/code> 2, 2/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
