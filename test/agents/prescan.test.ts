// Pre-scan structured output over the real wire format (scripted model, no sandbox needed): a bad
// plan is retried once with the validation error; a second bad reply is a typed failure.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { isAbsolute, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type PrescanInput, runPrescan } from "../../runner/agents/prescan.ts";
import { MalformedReply, UnfitScriptedReply } from "../../runner/agents/structured.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import { fixture } from "../run/harness.ts";

const SAM = `---
name: two-step
---
# Parent

## To-do
Combine.

## Expectation
- Combined.

## Sub-SAM: first

### To-do
Do the first part.

### Expectation
- First part done.
`;

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

async function setup(
  script: string,
): Promise<{ input: PrescanInput; model: Awaited<ReturnType<typeof createModel>>; tape: string }> {
  const dir = mkdtempSync(join(tmpdir(), "prescan-"));
  const parsed = parseSamString(SAM, join(dir, "task.md"));
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.diagnostics));
  const tape = join(dir, "audit.jsonl");
  const audit = new AuditTape(tape, { runId: "r1" });
  const file = isAbsolute(script) ? script : fixture(script);
  const model = await createModel(`scripted:${file}`, audit, { retry: { maxRetries: 0 } });
  closers.push(async () => {
    await model.close();
    audit.close();
  });
  const memory = "### Iteration 1: review failed\nFix the seed.\n";
  return {
    model,
    tape,
    input: {
      root: parsed.sam.root,
      complete: new Set(),
      iteration: 2,
      rank: { min: 1, max: 3, suggested: 2 },
      controlRank: 1,
      taskMemory: { text: memory, ref: "memory:task:r1", sha256: "abc" },
      groupMemory: undefined,
      history: "",
      skillIndex: "(none)",
      skillNames: [],
      meta: { runId: "r1" },
    },
  };
}

describe("pre-scan structured output", () => {
  it("retries once with the validation error, then accepts a valid plan (rank clamped)", async () => {
    const { model, input, tape } = await setup("prescan-retry.yaml");
    const plan = await runPrescan(model, input);
    expect(plan).toEqual({ node: "root/1", rank: 3, skills: [], context: "c", plan: "p", direction: "d" });
    const records = readTape(tape);
    expect(records.filter((r) => r.kind === "call")).toHaveLength(2);
    // The task memory that went into the prompt is on the tape, before the call that carried it.
    expect(records[0]).toMatchObject({
      kind: "injected",
      role: "prescan",
      source: "memory",
      ref: "memory:task:r1",
    });
  });

  it("fails with MalformedReply after two bad replies", async () => {
    const { model, input } = await setup("prescan-malformed.yaml");
    const error = await runPrescan(model, input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedReply);
    expect((error as Error).message).toMatch(
      /^the prescan agent's reply was not valid JSON for its schema, twice: /,
    );
    expect((error as Error).message).toContain("rank");
  });

  it("a plan with a key nested 20,000 deep is a malformed reply, and the tape stays writable and readable (AE-9)", async () => {
    const deep = `${"[".repeat(20_000)}1${"]".repeat(20_000)}`;
    const plan = `{"node":"root/1","rank":1,"skills":[],"context":"c","plan":"p","direction":"d","x":${deep}}`;
    const script = join(mkdtempSync(join(tmpdir(), "prescan-deep-")), "deep.yaml");
    writeFileSync(script, `prescan:\n  - text: '${plan}'\n  - text: '${plan}'\n`);
    const { model, input, tape } = await setup(script);
    const error = await runPrescan(model, input).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MalformedReply);
    expect((error as Error).message).toContain("structured output nests more than 64 levels deep");
    expect(readTape(tape).filter((r) => r.kind === "call")).toHaveLength(2);
    expect(readFileSync(tape, "utf8")).not.toContain('"json":');
  });

  it("a reply of the wrong shape whose retry has no reply names that reply, its field and what was expected", async () => {
    const { model, input, tape } = await setup("prescan-wrong-shape.yaml");
    let tokens = 0;
    const error = await runPrescan(model, input, (r) => {
      tokens += r.usage.input + r.usage.output;
    }).catch((e: unknown) => e);
    // Ends the run (not only the iteration: the next one would meet the same script).
    expect(error).toBeInstanceOf(UnfitScriptedReply);
    // The reply that did not fit was paid for: it is accounted, as on the tape.
    const call = readTape(tape).find((r) => r.kind === "call");
    expect(call?.kind === "call" && call.usage.input + call.usage.output).toBe(tokens);
    expect(tokens).toBeGreaterThan(0);
    const message = (error as Error).message;
    // The cause first (the reply at line 3 and its fields), then what the retry met.
    expect(message).toMatch(
      /^the prescan agent's reply did not fit its schema: reply prescan-wrong-shape\.yaml:3: .*node: Invalid input: expected string, received undefined/,
    );
    // The key it had that the schema does not take is named, with the ones it does.
    expect(message).toContain(
      'keys this reply does not take: "order" (it takes node, rank, skills, context, plan, direction)',
    );
    expect(message).toContain("the retry got no answer: ");
    expect(message).toContain("has no reply left");
    expect(message).toContain("docs/scripted.md");
  });
});
