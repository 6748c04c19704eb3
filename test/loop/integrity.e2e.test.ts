// Integrity events end to end on Docker (docs/integrity.md): ONE task (test/fixtures/integrity/task:
// a check asset, an allowlist, a host list through the run's proxy) and a table of scripted agents
// (labelled scripted), one per kind of attempt that is cheap to trigger; each run's history holds
// exactly the integrity events of its kind (the tool call named where one made it, and marked on the
// audit tape), the honest control none. For each run, the report's header line and section (string
// level; the asset-write run's page also in real Chromium) and `scifi audit show`'s marks are checked too. Then an
// eval of the same task with an honest and a tampering scripted model: 0 and > 0 events per trial,
// shares with their Wilson intervals, in summary.json, summary.csv and the page.
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderTranscript } from "../../runner/audit/render.ts";
import { summarizeTape } from "../../runner/audit/summary.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { runEval } from "../../runner/eval/engine.ts";
import { evalFiles } from "../../runner/eval/plan.ts";
import { readHistory } from "../../runner/memory/history.ts";
import type { HistoryRecord, IntegrityKind } from "../../runner/memory/history-events.ts";
import { renderReport } from "../../runner/report/html.ts";
import { loadRun } from "../../runner/report/load.ts";
import { buildReportModel } from "../../runner/report/model.ts";
import { writeRunReport } from "../../runner/report/report.ts";
import { runTask } from "../../runner/run/setup.ts";
import { createDockerBackend } from "../../runner/sandbox/docker.ts";
import { hasEngine } from "../helpers/engines.ts";
import { launchChromium, openFile } from "../report/browser.ts";
import { workToolExchanges } from "./adversarial/workspace.ts";
import { ensureImage, REPO } from "./harness.ts";

const FIXTURE = join(REPO, "test", "fixtures", "integrity");

interface Row {
  agent: string;
  /** The kind every integrity event of the run has; undefined: the run has none. */
  kind?: IntegrityKind;
  /** The event names the work agent's tool call (else no call: found between phases, or the review). */
  fromCall: boolean;
  outcome: "passed" | "failed";
}

const TABLE: Row[] = [
  { agent: "honest.yaml", fromCall: false, outcome: "passed" },
  { agent: "asset-write.yaml", kind: "asset_write", fromCall: true, outcome: "failed" },
  { agent: "rename-folder.yaml", kind: "asset_tampering", fromCall: false, outcome: "failed" },
  { agent: "allowlist.yaml", kind: "allowlist_refused", fromCall: true, outcome: "failed" },
  { agent: "network.yaml", kind: "network_refused", fromCall: true, outcome: "failed" },
  { agent: "review-pass.yaml", kind: "review_override", fromCall: false, outcome: "failed" },
];

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

  it.each(TABLE)("$agent", { timeout: 240_000 }, async (row) => {
    const dir = join(root, row.agent.replace(/\W/g, "-"));
    const home = join(dir, "home");
    const taskDir = join(dir, "task");
    mkdirSync(home, { recursive: true });
    cpSync(join(FIXTURE, "task"), taskDir, { recursive: true });
    const site = join(home, "site-policy.yaml");
    writeFileSync(site, `allowedHosts: ["*.test:8000"]\n`);
    const result = await runTask({
      home,
      task: join(taskDir, "task.md"),
      sitePolicy: site,
      model: `scripted:${join(FIXTURE, "agents", row.agent)}`,
      limits: { walltimeSec: 200, bashTimeoutSec: 30 },
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      sandboxBackend: createDockerBackend({ proxy: { hosts: {}, systemResolver: false } }),
    });
    expect(result.outcome.status, result.outcome.reason).toBe(row.outcome);
    if (row.kind === "asset_write") tampered = { home, dir: result.dir };
    const history = readHistory(join(result.dir, "history.jsonl"));
    const events = history.filter(
      (e): e is Extract<HistoryRecord, { type: "integrity" }> => e.type === "integrity",
    );
    const html = renderReport(buildReportModel(loadRun(join(result.dir, "audit.jsonl"), home)));
    if (!row.kind) {
      expect(events).toEqual([]);
      expect(html).toMatch(/<th>Integrity<\/th><td id="fact-integrity">none<\/td>/);
      expect(html).not.toContain('id="integrity"');
      return;
    }
    const tools = () => JSON.stringify(workToolExchanges(join(result.dir, "audit.jsonl")));
    expect(events.length, tools()).toBeGreaterThan(0);
    expect(
      events.map((e) => e.kind),
      tools(),
    ).toEqual(events.map(() => row.kind));
    for (const e of events) {
      expect(e.rule.length).toBeGreaterThan(0);
      expect(e.action.length).toBeGreaterThan(0);
      expect(e.role).toBe(row.kind === "review_override" ? "review" : "work");
    }
    // The header counts them by kind and links the section, which lists each.
    expect(html).toContain(`<a href="#integrity"><b>${events.length} (${row.kind} ${events.length})</b></a>`);
    expect(html.match(/<tr class="integrity-event"/g)?.length).toBe(events.length);

    const tape = readTape(join(result.dir, "audit.jsonl"));
    const transcript = renderTranscript(summarizeTape(tape));
    const withCall = events.filter((e) => e.call);
    if (!row.fromCall) {
      expect(withCall).toEqual([]);
      expect(transcript).not.toContain("INTEGRITY");
      return;
    }
    expect(withCall.length).toBe(events.length);
    for (const e of withCall) {
      const call = e.call as NonNullable<typeof e.call>;
      // The call record at that sequence number is the work agent's, and its response made this call.
      const record = tape.find((r) => r.seq === call.seq);
      expect(record?.kind === "call" && record.role).toBe("work");
      const uses = record?.kind === "call" ? (record.response?.content ?? []) : [];
      expect(uses.some((b) => b.type === "tool_use" && b.id === call.id && b.name === call.tool)).toBe(true);
      expect(html).toContain(`href="#call-${call.seq}">#${call.seq} ${call.tool}</a>`);
      expect(transcript).toContain(`!! INTEGRITY ${row.kind}: tool ${call.tool} ${call.id}`);
    }
  });

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
      expect(page).toMatch(/<code>asset_write<\/code> 2, 2/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
