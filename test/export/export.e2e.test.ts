// `scifi export` on real runs of the shipped examples (Docker sandbox, scripted models): the
// Verilator counter fixed (passed) and given up (blocked), the two-level sub-SAM task, and the
// sumfix task against a hidden reference; plus an eval folder written per the trial contract
// (runner/eval/trial-result.ts) over the passing and the failing run. Each format validates (ATIF
// against atif.schema.json, SFT and preference rows against their documented shapes, OTLP decoded
// and re-encoded with the OpenTelemetry packages, and posted to a local receiver); tampered tapes
// are refused; a planted key, an export-time secret, host paths and the hidden reference's content
// are in no exported byte. (Over 500 lines: one file, so the four real runs are made once.)
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonTraceSerializer } from "@opentelemetry/otlp-transformer";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { runExport } from "../../runner/export/export.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { adversarialWorkspace, runIn } from "../run/adversarial/workspace.ts";
import { ensureImage, runScripted, workspace } from "../run/harness.ts";
import { decodeSpans, type OtlpRequest, attributes as otlpAttributes } from "./otlp-decode.ts";

/** A key of a known shape, in a file the agent reads: redacted on the tape already. */
const PLANTED_KEY = "sk-ant-api03-PLANTEDexportKey0123456789abcdef";
/** A value on the tape that becomes secret only at export time (an env var named ..._TOKEN). */
const EXPORT_SECRET = "PLANTED-export-only-5e1d77";
const HIDDEN_MARKER = "HIDDEN-REF-c4f1a9e27b";
const BIN = new URL("../../bin/scifi.js", import.meta.url).pathname;
const SCHEMA = z.fromJSONSchema(
  JSON.parse(readFileSync(new URL("../../runner/export/atif.schema.json", import.meta.url), "utf8")),
);

const chatMessage = z.union([
  z.strictObject({ role: z.enum(["system", "user"]), content: z.string() }),
  z.strictObject({
    role: z.literal("assistant"),
    content: z.string().nullable(),
    tool_calls: z
      .array(
        z.strictObject({
          id: z.string(),
          type: z.literal("function"),
          function: z.strictObject({ name: z.string(), arguments: z.string() }),
        }),
      )
      .optional(),
  }),
  z.strictObject({ role: z.literal("tool"), tool_call_id: z.string(), content: z.string() }),
]);
const chatTool = z.strictObject({
  type: z.literal("function"),
  function: z.strictObject({
    name: z.string(),
    description: z.string(),
    parameters: z.record(z.string(), z.unknown()),
  }),
});
/** docs/export.md, SFT. */
const SFT_ROW = z.strictObject({
  messages: z.array(chatMessage).min(2),
  tools: z.array(chatTool),
  label: z.looseObject({
    run_id: z.string(),
    verdict: z.string(),
    passed: z.boolean(),
    role: z.string(),
    scripted: z.boolean(),
  }),
});
/** docs/export.md, preference. */
const PAIR = z.strictObject({
  input: z.strictObject({ messages: z.array(chatMessage).min(2), tools: z.array(chatTool) }),
  preferred_output: z.array(chatMessage).min(1),
  non_preferred_output: z.array(chatMessage).min(1),
  metadata: z.looseObject({
    task: z.string(),
    variant: z.string(),
    model: z.string(),
    role: z.string(),
    reason: z.string(),
  }),
});

interface Trajectory {
  trajectory_id: string;
  steps: {
    step_id: number;
    source: string;
    model_name?: string;
    metrics?: unknown;
    message: string;
    observation?: { results: { content?: string; subagent_trajectory_ref?: { trajectory_id: string }[] }[] };
    extra?: Record<string, unknown> & { tape?: { seq: number; hash: string }; check?: string };
  }[];
  subagent_trajectories?: Trajectory[];
  extra?: Record<string, unknown>;
}

function walk(t: Trajectory, visit: (t: Trajectory) => void): void {
  visit(t);
  for (const s of t.subagent_trajectories ?? []) walk(s, visit);
}

function jsonLines<T>(file: string): T[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as T);
}

function calls(dir: string): (CallRecord & { hash?: string })[] {
  return readTape(join(dir, "audit.jsonl")).filter((r): r is CallRecord => r.kind === "call");
}

function trial(
  run: string,
  evalId: string,
  status: "pass" | "fail",
  verdict: string,
  repeat: number,
): TrialResult {
  return {
    version: 1,
    evalId,
    trialId: `verilator.default.scripted.r${repeat}`,
    task: "verilator-counter-debug",
    variant: "default",
    model: "scripted",
    scripted: true,
    repeat,
    status,
    verdict,
    exitCode: status === "pass" ? 0 : 3,
    cause: status === "pass" ? "every check and review item passed" : "the work agent reported a blocker",
    iterations: 1,
    wallMs: 1000,
    tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    cacheReadShare: 0,
    usd: 0,
    toolCalls: 4,
    toolRejections: 0,
    approvalsWaited: 0,
    runId: run.split("/").pop() as string,
    runDir: run,
    startedAt: "2026-12-02T00:00:00.000Z",
    endedAt: "2026-12-02T00:01:00.000Z",
  };
}

describe.skipIf(!hasEngine("docker"))("scifi export (docker, scripted models)", { timeout: 300_000 }, () => {
  const out = mkdtempSync(join(tmpdir(), "scifi-export-test-"));
  const home = join(out, "home");
  let pass: string;
  let fail: string;
  let sub: string;
  let hidden: string;
  let roots: string[];

  beforeAll(async () => {
    ensureImage();
    const ws = workspace("verilator-counter-debug");
    // The agent reads rtl/counter.v (read_file): the key and the value reach its tool result.
    const rtl = join(ws.taskDir, "rtl", "counter.v");
    writeFileSync(
      rtl,
      `${readFileSync(rtl, "utf8")}// lab key ${PLANTED_KEY}\n// lab tag ${EXPORT_SECRET}\n`,
    );
    pass = (await runScripted(ws, "verilator-pass.yaml")).result.dir;
    const wsFail = workspace("verilator-counter-debug");
    fail = (await runScripted(wsFail, "verilator-failing.yaml")).result.dir;
    const wsSub = workspace("two-level-subsams");
    sub = (await runScripted(wsSub, "subsams-pass.yaml")).result.dir;
    const wsHidden = adversarialWorkspace("sumfix-hidden");
    hidden = (await runIn(wsHidden, "honest-hidden.yaml", "docker")).result.dir;
    roots = [ws.root, wsFail.root, wsSub.root, wsHidden.root];
    mkdirSync(home);
    for (const [i, [dir, status, verdict]] of (
      [
        [pass, "pass", "PASSED"],
        [fail, "fail", "BLOCKED"],
      ] as const
    ).entries()) {
      const result = trial(dir, "e1", status, verdict, i);
      const folder = join(home, "evals", "e1", "trials", result.trialId);
      mkdirSync(folder, { recursive: true });
      writeFileSync(join(folder, "result.json"), `${JSON.stringify(result, null, 2)}\n`);
    }
  }, 1_800_000);

  it("atif: every run validates against the schema; one agent step per taped call, with its tape hash; checks are steps without a model call", async () => {
    const file = join(out, "all.atif.jsonl");
    const summary = await runExport({ inputs: [pass, fail, sub, hidden], format: "atif", home, out: file });
    expect(summary.refused).toEqual([]);
    const trajectories = jsonLines<Trajectory>(file);
    expect(trajectories).toHaveLength(4);
    for (const [index, t] of trajectories.entries()) {
      const parsed = SCHEMA.safeParse(t);
      expect(parsed.success, parsed.success ? "" : parsed.error.message).toBe(true);
      const dir = [pass, fail, sub, hidden][index] as string;
      const agentSteps: NonNullable<Trajectory["steps"][number]["extra"]>["tape"][] = [];
      const ids = new Set<string>();
      walk(t, (x) => {
        ids.add(x.trajectory_id);
        expect(x.steps.map((s) => s.step_id)).toEqual(x.steps.map((_, i) => i + 1));
        for (const s of x.steps) if (s.source === "agent") agentSteps.push(s.extra?.tape);
      });
      // Every subagent reference resolves to an embedded trajectory.
      walk(t, (x) => {
        const embedded = new Set((x.subagent_trajectories ?? []).map((s) => s.trajectory_id));
        for (const s of x.steps)
          for (const r of s.observation?.results ?? [])
            for (const ref of r.subagent_trajectory_ref ?? [])
              expect(embedded.has(ref.trajectory_id)).toBe(true);
      });
      const taped = calls(dir);
      expect(agentSteps.map((s) => s?.seq).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
        taped.map((c) => c.seq),
      );
      for (const c of taped) expect(agentSteps.find((s) => s?.seq === c.seq)?.hash).toBe(c.hash);
    }
    const root = trajectories[0] as Trajectory;
    const checks = root.steps.filter((s) => s.extra?.check !== undefined);
    expect(checks.map((s) => [s.extra?.check, s.source, s.model_name, s.metrics])).toEqual([
      ["root/check-1", "system", undefined, undefined],
      ["root/check-2", "system", undefined, undefined],
      ["root/check-3", "system", undefined, undefined],
    ]);
    // The run stage's output; the compare stage's stays withheld (it may quote the reference).
    expect(checks[0]?.observation?.results[0]?.content).toContain("wrote 500 cycles");
    expect(checks[1]?.observation?.results[0]?.content).toBe("[compare stage: its output is not exported]");
    expect(root.extra).toMatchObject({ verdict: "passed", scripted: true });
    // The work pass: tool calls and their results as the observation of the same step.
    const work = root.subagent_trajectories?.find((s) =>
      s.trajectory_id.endsWith("/root/work/it1"),
    ) as Trajectory;
    const first = work.steps.find((s) => s.source === "agent") as Trajectory["steps"][number] & {
      tool_calls: { tool_call_id: string }[];
    };
    expect(first.observation?.results[0]).toMatchObject({
      source_call_id: first.tool_calls[0]?.tool_call_id,
    });
  });

  it("atif: the sub-SAM run nests (the task, its sub-SAMs, each with its own agent passes)", async () => {
    const file = join(out, "sub.atif.jsonl");
    await runExport({ inputs: [sub], format: "atif", home, out: file });
    const [t] = jsonLines<Trajectory>(file);
    const id = (suffix: string) => `${sub.split("/").pop()}/${suffix}`;
    expect(t?.trajectory_id).toBe(id("root"));
    const children = t?.subagent_trajectories?.map((s) => s.trajectory_id) ?? [];
    expect(children).toEqual(expect.arrayContaining([id("root/1"), id("root/2"), id("root/work/it3")]));
    const simulate = t?.subagent_trajectories?.find((s) => s.trajectory_id === id("root/1"));
    expect(simulate?.subagent_trajectories?.map((s) => s.trajectory_id)).toEqual([
      id("root/1/work/it1"),
      id("root/1/review/it1"),
    ]);
    expect(simulate?.steps.some((s) => s.extra?.check === "root/1/check-1")).toBe(true);
    expect(
      simulate?.subagent_trajectories?.[0]?.steps.filter((s) => s.source === "agent").length,
    ).toBeGreaterThan(0);
  });

  it("sft (the command): passing runs by default, rows in the documented shape, tools as the model saw them", async () => {
    const file = join(out, "rows.jsonl");
    const r = await runScifi(home, ["export", pass, fail, "--format", "sft", "-o", file], 60_000);
    expect(r.code, r.stderr).toBe(0);
    const rows = jsonLines<z.infer<typeof SFT_ROW>>(file);
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      const parsed = SFT_ROW.safeParse(row);
      expect(parsed.success, parsed.success ? "" : parsed.error.message).toBe(true);
      expect(row.label).toMatchObject({ verdict: "passed", passed: true, scripted: true });
    }
    const work = calls(pass).filter((c) => c.role === "work");
    const workRow = rows.find((row) => row.label.role === "work");
    expect(workRow?.tools.map((t) => t.function)).toEqual(
      work.at(-1)?.request.tools?.map((t) => ({
        name: t.name,
        description: t.description,
        parameters: t.inputSchema,
      })),
    );
    // With the verdicts named, the blocked run's rows come too, labelled.
    const all = join(out, "rows-all.jsonl");
    const both = await runScifi(
      home,
      ["export", pass, fail, "--format", "sft", "--verdict", "passed,blocked", "-o", all],
      60_000,
    );
    expect(both.code, both.stderr).toBe(0);
    expect(new Set(jsonLines<z.infer<typeof SFT_ROW>>(all).map((row) => row.label.verdict))).toEqual(
      new Set(["passed", "blocked"]),
    );
  });

  it("preference: pairs from the eval's passing and failing repeats, same role and model, verdicts as the reason", async () => {
    const file = join(out, "pairs.jsonl");
    const r = await runScifi(home, ["export", "e1", "--format", "preference", "-o", file], 60_000);
    expect(r.code, r.stderr).toBe(0);
    const pairs = jsonLines<z.infer<typeof PAIR>>(file);
    expect(pairs.map((p) => p.metadata.role).sort()).toEqual(["final_review", "prescan", "work"]);
    for (const p of pairs) {
      const parsed = PAIR.safeParse(p);
      expect(parsed.success, parsed.success ? "" : parsed.error.message).toBe(true);
      expect(p.metadata).toMatchObject({
        task: "verilator-counter-debug",
        variant: "default",
        model: "scripted",
      });
      expect(p.metadata.reason).toMatch(/PASSED.*BLOCKED/);
      expect(p.metadata).toMatchObject({
        preferred: { run_id: pass.split("/").pop() },
        non_preferred: { run_id: fail.split("/").pop() },
      });
    }
    const work = pairs.find((p) => p.metadata.role === "work");
    expect(JSON.stringify(work?.preferred_output)).toContain("edit_file");
    expect(JSON.stringify(work?.non_preferred_output)).toContain("report_blocker");
  });

  it("otlp: one trace per run, GenAI spans; decodes and re-encodes with the OpenTelemetry packages; content only with --content; posted to a receiver", async () => {
    const file = join(out, "traces.json");
    await runExport({ inputs: [pass, sub], format: "otlp", home, out: file });
    const request = JSON.parse(readFileSync(file, "utf8")) as OtlpRequest;
    const spans = decodeSpans(request);
    expect(
      JSON.parse(Buffer.from(JsonTraceSerializer.serializeRequest(spans) as Uint8Array).toString("utf8")),
    ).toEqual(request);
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(2);
    const chat = spans.filter((s) => s.name.startsWith("chat "));
    expect(chat).toHaveLength(calls(pass).length + calls(sub).length);
    for (const s of chat) {
      expect(s.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
      });
      expect(s.name).toBe(`chat ${s.attributes["gen_ai.request.model"]}`);
      for (const k of ["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "scifi.cost_usd"])
        expect(typeof s.attributes[k]).toBe("number");
      expect(s.attributes["gen_ai.input.messages"]).toBeUndefined();
    }
    const names = new Set(spans.map((s) => s.name));
    for (const n of [
      "invoke_agent scifi",
      "invoke_agent work",
      "iteration 1",
      "execute_tool edit_file",
      "check root/check-1",
    ])
      expect(names.has(n), n).toBe(true);
    const ids = new Set(spans.map((s) => s.spanContext().spanId));
    for (const s of spans) if (s.parentSpanContext) expect(ids.has(s.parentSpanContext.spanId)).toBe(true);

    const withContent = join(out, "traces-content.json");
    await runExport({ inputs: [pass], format: "otlp", home, out: withContent, content: true });
    const contentSpans = decodeSpans(JSON.parse(readFileSync(withContent, "utf8")) as OtlpRequest);
    expect(
      contentSpans.some((s) =>
        String(s.attributes["gen_ai.input.messages"] ?? "").includes("count reached at most 10"),
      ),
    ).toBe(true);

    const received: { type?: string; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        received.push({ type: req.headers["content-type"], body });
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`;
      const r = await runScifi(home, ["export", pass, sub, "--format", "otlp", "--endpoint", url], 60_000);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      server.close();
    }
    expect(received).toHaveLength(1);
    expect(received[0]?.type).toContain("application/json");
    const posted = JSON.parse(received[0]?.body ?? "") as OtlpRequest;
    const key = (s: { name: string; attributes: Record<string, unknown> }) =>
      `${s.name} ${JSON.stringify(s.attributes)}`;
    const postedSpans = posted.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans));
    expect(
      postedSpans.map((s) => key({ name: s.name, attributes: otlpAttributes(s.attributes) })).sort(),
    ).toEqual(spans.map((s) => key({ name: s.name, attributes: s.attributes })).sort());
  });

  it("refuses a tampered tape, a tape cut back, and a tape without MACs when a key is set; nothing is written", async () => {
    const edited = join(out, "edited");
    cpSync(pass, edited, { recursive: true });
    const tape = join(edited, "audit.jsonl");
    const lines = readFileSync(tape, "utf8").split("\n");
    lines[2] = (lines[2] as string).replace('"role":"work"', '"role":"wurk"');
    writeFileSync(tape, lines.join("\n"));
    const target = join(out, "refused.jsonl");
    const r = await runScifi(home, ["export", edited, sub, "--format", "atif", "-o", target], 60_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/audit\.jsonl:3: hash does not match the content/);
    expect(existsSync(target)).toBe(false);

    const cut = join(out, "cut");
    cpSync(pass, cut, { recursive: true });
    const full = readFileSync(join(cut, "audit.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "");
    writeFileSync(join(cut, "audit.jsonl"), `${full.slice(0, -1).join("\n")}\n`);
    const c = await runScifi(home, ["export", cut, "--format", "sft", "-o", target], 60_000);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/record\(s\) at the end were dropped/);

    const keyFile = join(out, "audit.key");
    writeFileSync(keyFile, "0123456789abcdef0123456789abcdef\n");
    const k = await runScifi(
      home,
      ["export", pass, "--format", "otlp", "--key", keyFile, "-o", target],
      60_000,
    );
    expect(k.code).toBe(1);
    expect(k.stderr).toMatch(/no MAC/);
    expect(existsSync(target)).toBe(false);

    // --skip-refused: the others are exported, the refused one named.
    const s = await runScifi(
      home,
      ["export", edited, sub, "--format", "atif", "--skip-refused", "-o", target],
      60_000,
    );
    expect(s.code).toBe(1);
    expect(s.stderr).toMatch(/REFUSED .*hash does not match/);
    expect(jsonLines<Trajectory>(target).map((t) => t.trajectory_id)).toEqual([
      `${sub.split("/").pop()}/root`,
    ]);
  });

  it("never exported: a planted key, a secret named at export time, host paths, the hidden reference and its check's output", async () => {
    const tapes = [pass, hidden].map((d) => readFileSync(join(d, "audit.jsonl"), "utf8")).join("");
    expect(tapes).toContain(EXPORT_SECRET); // on the tape: only the export can keep it from leaving
    expect(tapes).not.toContain(PLANTED_KEY);
    const hiddenContent = readFileSync(join(hidden, "pristine", "checks", "secret.json"), "utf8");
    const env = { ...process.env, LAB_EXPORT_TOKEN: EXPORT_SECRET, SCIFI_HOME: home };
    const outputs: string[] = [];
    for (const args of [
      [pass, hidden, "--format", "atif"],
      [pass, hidden, "--format", "sft", "--verdict", "passed,failed,blocked"],
      [pass, hidden, "--format", "sft", "--per", "call", "--verdict", "passed,failed,blocked"],
      [pass, hidden, "--format", "otlp", "--content"],
      ["e1", "--format", "preference"],
    ]) {
      const target = join(out, `never-${outputs.length}.out`);
      execFileSync(process.execPath, [BIN, "export", ...args, "-o", target], { env, stdio: "pipe" });
      outputs.push(readFileSync(target, "utf8"));
    }
    for (const text of outputs) {
      expect(text.length).toBeGreaterThan(1000);
      expect(text).not.toContain("PLANTED");
      expect(text).not.toContain(HIDDEN_MARKER);
      expect(text).not.toContain(JSON.stringify(hiddenContent).slice(1, -1));
      for (const root of roots) expect(text).not.toContain(root);
      expect(text).not.toContain(home);
    }
    // The compare stage's output is withheld; the run stage's is there.
    const [atif] = outputs;
    const t = JSON.parse((atif as string).split("\n")[1] as string) as Trajectory;
    const compare = t.steps.find((s) => s.extra?.check === "root/check-2");
    expect(compare?.observation?.results[0]?.content).toBe("[compare stage: its output is not exported]");
    expect(t.steps.find((s) => s.extra?.check === "root/check-1")?.extra).toMatchObject({ stage: "run" });
  });

  it("refuses a run whose export would carry a hidden asset's content, naming the asset and writing nothing", async () => {
    const leak = join(out, "leak");
    cpSync(pass, leak, { recursive: true });
    const seen = calls(pass)
      .flatMap((c) => c.request.messages.flatMap((m) => m.content))
      .find((b) => b.type === "tool_result" && b.content.includes("count reached at most 10"));
    expect(seen?.type).toBe("tool_result");
    mkdirSync(join(leak, "pristine", "checks"), { recursive: true });
    writeFileSync(
      join(leak, "pristine", "checks", "ref.txt"),
      seen?.type === "tool_result" ? seen.content : "",
    );
    const state = JSON.parse(readFileSync(join(leak, "state.json"), "utf8"));
    state.pristine.files.push({
      rel: "checks/ref.txt",
      kind: "asset",
      hidden: true,
      sha256: "0".repeat(64),
      mode: 420,
    });
    writeFileSync(join(leak, "state.json"), JSON.stringify(state));
    for (const format of ["atif", "sft", "otlp"]) {
      const target = join(out, `leak.${format}`);
      const r = await runScifi(home, ["export", leak, "--format", format, "--content", "-o", target], 60_000);
      expect(r.code, format).toBe(1);
      expect(r.stderr).toMatch(/holds the content of the hidden check asset checks\/ref\.txt/);
      expect(existsSync(target)).toBe(false);
    }
  });

  it("filters: verdict, task, role, model, eval id and date", async () => {
    const select = async (filters: Parameters<typeof runExport>[0]["filters"]) =>
      (
        await runExport({
          inputs: [pass, fail, sub],
          format: "atif",
          home,
          out: join(out, "f.jsonl"),
          filters,
        })
      ).exported.map((e) => e.runId);
    const id = (d: string) => d.split("/").pop();
    expect(await select({ verdict: ["blocked"] })).toEqual([id(fail)]);
    expect(await select({ task: ["two-level-subsams"] })).toEqual([id(sub)]);
    expect(await select({ model: "subsams-pass" })).toEqual([id(sub)]);
    expect(await select({ since: "2000-01-01", until: "2999-01-01" })).toHaveLength(3);
    await expect(select({ until: "2000-01-01" })).rejects.toThrow(/no run matches/);
    const evalRuns = await runExport({
      inputs: ["e1"],
      format: "atif",
      home,
      out: join(out, "e.jsonl"),
      filters: { evalId: "e1" },
    });
    expect(evalRuns.exported.map((e) => e.runId)).toEqual([id(pass), id(fail)]);
    await runExport({
      inputs: [pass],
      format: "atif",
      home,
      out: join(out, "r.jsonl"),
      filters: { role: ["work"] },
    });
    const [t] = jsonLines<Trajectory>(join(out, "r.jsonl"));
    expect(t?.subagent_trajectories?.map((s) => s.trajectory_id.split("/").slice(-2)[0])).toEqual(["work"]);
  });
});
