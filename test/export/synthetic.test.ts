// Host-only checks of the export on a run folder written with the real AuditTape (no sandbox): a
// tape of several iterations exports to ATIF that validates against the schema with one agent step
// per call; one edited line and a dropped tail are refused with their reasons; the SFT rows of the same tape carry the tools as sent.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AuditTape } from "../../runner/audit/tape.ts";
import { RUN_END_EVENT, type TapeRequest } from "../../runner/audit/types.ts";
import { ExportFailed, runExport } from "../../runner/export/export.ts";
import { freezeDeep } from "../../runner/frozen.ts";
import { sha256 } from "../../runner/sha256.ts";

const SCHEMA = z.fromJSONSchema(
  JSON.parse(readFileSync(new URL("../../runner/export/atif.schema.json", import.meta.url), "utf8")),
);
const TOOLS: TapeRequest["tools"] = [
  {
    name: "bash",
    description: "Run a command.",
    inputSchema: { type: "object", properties: { command: { type: "string" } } },
  },
];

/** A run folder with `iterations` work passes of `steps` calls each, anchored in state.json. */
function synthRun(iterations: number, steps: number): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-export-synth-"));
  const tape = new AuditTape(join(dir, "audit.jsonl"), { runId: "synth", key: null });
  const history: string[] = [];
  for (let it = 1; it <= iterations; it++) {
    history.push(
      JSON.stringify({
        seq: it,
        time: new Date().toISOString(),
        type: "prescan",
        iteration: it,
        node: "root",
        rank: 1,
        skills: [],
        direction: "d",
      }),
    );
    let messages: TapeRequest["messages"] = freezeDeep([
      { role: "user", content: [{ type: "text", text: `iteration ${it}` }] },
    ]);
    for (let step = 0; step < steps; step++) {
      const id = `t${it}_${step}`;
      const content = [{ type: "tool_use" as const, id, name: "bash", input: { command: `echo ${step}` } }];
      tape.append({
        kind: "call",
        role: "work",
        iteration: it,
        step,
        provider: "scripted",
        model: "scripted-synth",
        entry: "scripted-synth",
        request: { kind: "work", rank: 1, system: "You work.", messages, tools: TOOLS },
        response: { content, stopReason: "tool_use" },
        usage: { input: 10, output: 2, cacheWrite: 0, cacheRead: 5, reasoning: 0 },
        costUsd: 0.001,
        latencyMs: 2,
        attempts: [],
      });
      messages = freezeDeep([
        ...messages,
        { role: "assistant", content },
        { role: "user", content: [{ type: "tool_result", toolUseId: id, content: `${step}\n` }] },
      ]);
    }
  }
  // The runner's closing record (runner/run/session/session.ts end): an export requires it.
  tape.append({ kind: "event", event: RUN_END_EVENT, data: { outcome: "passed", reason: "ok" } });
  tape.close();
  const lines = readFileSync(join(dir, "audit.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "");
  const head = { seq: lines.length - 1, hash: sha256(lines.at(-1) as string) };
  writeFileSync(join(dir, "history.jsonl"), `${history.join("\n")}\n`);
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      runId: "synth",
      model: "scripted:synth",
      auditHead: head,
      outcome: { status: "passed", reason: "ok" },
    }),
  );
  return dir;
}

describe("export of a synthetic run folder (host only)", () => {
  it("ATIF validates, one agent step per call with its observation; SFT rows carry the tools", async () => {
    const dir = synthRun(3, 5);
    const out = join(dir, "out.jsonl");
    await runExport({ inputs: [dir], format: "atif", home: dir, out });
    const t = JSON.parse(readFileSync(out, "utf8")) as {
      subagent_trajectories: { steps: { source: string; observation?: unknown }[] }[];
    };
    const parsed = SCHEMA.safeParse(t);
    expect(parsed.success, parsed.success ? "" : parsed.error.message).toBe(true);
    expect(t.subagent_trajectories).toHaveLength(3);
    for (const pass of t.subagent_trajectories) {
      const agent = pass.steps.filter((s) => s.source === "agent");
      expect(agent).toHaveLength(5);
      expect(agent.slice(0, 4).every((s) => s.observation !== undefined)).toBe(true);
    }
    const rows = join(dir, "rows.jsonl");
    await runExport({ inputs: [dir], format: "sft", home: dir, out: rows });
    const lines = readFileSync(rows, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { tools: unknown[]; messages: unknown[] });
    expect(lines).toHaveLength(3);
    expect(lines[0]?.tools).toEqual([
      {
        type: "function",
        function: { name: "bash", description: "Run a command.", parameters: TOOLS?.[0]?.inputSchema },
      },
    ]);
    expect(lines[0]?.messages).toHaveLength(2 + 5 * 2 - 1);
  });

  it("refuses an edited line and a dropped tail, writing nothing", async () => {
    const refusal = async (dir: string) => {
      const out = join(dir, "never.jsonl");
      const error = await runExport({ inputs: [dir], format: "atif", home: dir, out }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ExportFailed);
      expect(() => readFileSync(out)).toThrow(/ENOENT/);
      return (error as ExportFailed).summary.refused[0]?.reason ?? "";
    };
    const edited = synthRun(2, 3);
    const tape = join(edited, "audit.jsonl");
    writeFileSync(tape, readFileSync(tape, "utf8").replace('"echo 1"', '"echo 9"'));
    expect(await refusal(edited)).toMatch(/audit\.jsonl:2: hash does not match the content/);

    const cut = synthRun(2, 3);
    const lines = readFileSync(join(cut, "audit.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l !== "");
    writeFileSync(join(cut, "audit.jsonl"), `${lines.slice(0, -2).join("\n")}\n`);
    expect(await refusal(cut)).toMatch(/at least 2 record\(s\) at the end were dropped/);
  });
});
