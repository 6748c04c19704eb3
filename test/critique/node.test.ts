// One critique of a node, host-side (critiqueNode): the scripted model (labelled scripted, over HTTP)
// answers the critique, the tracer's conversation is given directly (its sandbox is the e2e tests'
// business: test/critique/critique.e2e.test.ts). The critique is shown the cited code as the runner
// read it, numbered; a tracer without a valid trace twice leaves a record that says so.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { AuditTape } from "../../runner/audit/tape.ts";
import { critiqueNode } from "../../runner/critique/critique-pass.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { REPO } from "../run/harness.ts";

const FIXTURES = join(REPO, "test", "fixtures");

async function setUp(critiqueReplies: unknown[]) {
  const root = mkdtempSync(join(tmpdir(), "scifi-critique-node-"));
  const taskDir = join(root, "task");
  cpSync(join(REPO, "tasks", "examples", "lhco-dijet-selection"), taskDir, { recursive: true });
  cpSync(join(FIXTURES, "critique", "analysis_wrong.py"), join(taskDir, "analysis.py"));
  const script = join(root, "script.yaml");
  writeFileSync(script, JSON.stringify({ critique: critiqueReplies }));
  const audit = new AuditTape(join(root, "audit.jsonl"), { runId: "critique-node" });
  const model = await createModel(`scripted:${script}`, audit);
  const parsed = parseSamSync(join(taskDir, "task.md"));
  if (!parsed.ok) throw new Error("example SAM does not parse");
  let stopped = 0;
  // The tracer's sandbox is not used by a tracer whose answer is given: only its stop is observed.
  const sandbox = { stop: async () => void stopped++ } as unknown as Sandbox;
  return { root, taskDir, model, audit, node: parsed.sam.root, sandbox, stopped: () => stopped };
}

const block = parse(readFileSync(join(FIXTURES, "runs", "lhco-critique-block.yaml"), "utf8")) as {
  tracer: { json?: unknown }[];
  critique: { json: unknown; expect: string }[];
};

describe("critiqueNode (scripted critique)", () => {
  it("shows the critique the cited code, numbered, and checks the findings' citations", async () => {
    const reply = block.critique[0];
    const s = await setUp([{ expect: '  39|     if any(j["btag"] > 0 for j in jets):', json: reply?.json }]);
    try {
      const record = await critiqueNode({
        node: s.node,
        iteration: 1,
        mode: "report",
        taskDir: s.taskDir,
        model: s.model,
        packs: [{ name: "lhco", text: "Domain: collider.", sha256: "0".repeat(64) }],
        rank: 1,
        meta: { runId: "critique-node", iteration: 1 },
        openSandbox: async () => s.sandbox,
        converse: async () => ({ json: block.tracer[1]?.json, text: "" }),
      });
      expect(record.failed).toBeUndefined();
      expect(record.findings.map((f) => f.verified)).toEqual([true, true, false]);
      expect(record.packs).toEqual(["lhco"]);
      expect(s.stopped()).toBe(1);
      const tape = readFileSync(join(s.root, "audit.jsonl"), "utf8");
      expect(tape).toContain('"ref":"critique:lhco"');
      expect(tape).toContain("## Domain pack: lhco");
    } finally {
      await s.model.close();
      s.audit.close();
    }
  });

  it("a tracer without a valid trace twice: the record says no critique, and the sandbox is stopped", async () => {
    const s = await setUp([]);
    try {
      let asked = 0;
      const record = await critiqueNode({
        node: s.node,
        iteration: 1,
        mode: "block",
        taskDir: s.taskDir,
        model: s.model,
        packs: [],
        rank: 1,
        meta: { runId: "critique-node", iteration: 1 },
        openSandbox: async () => s.sandbox,
        converse: async (brief) => {
          asked++;
          if (asked === 2) expect(brief).toContain("Your trace was rejected: items: ");
          return { text: '{"items": "not a list"}' };
        },
      });
      expect(asked).toBe(2);
      expect(record.failed).toMatch(/^the tracer gave no valid trace twice: items: /);
      expect(record.findings).toEqual([]);
      expect(s.stopped()).toBe(1);
    } finally {
      await s.model.close();
      s.audit.close();
    }
  });
});
