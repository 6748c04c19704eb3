// Attack on issue 41's context budget (attacker a41c; runner/helpers/ask/ask.ts, runner/helpers/
// make-task/make-task.ts, runner/helpers/draft-loop.ts). Fixed (fix41-briefs): the helpers' requests
// are kept under the gateway's budget for their kind and rank (runner/helpers/budget.ts,
// runner/agents/brief-budget.ts): with a known window a helper sends the entry's reply reservation,
// never its own larger `max_tokens`, drops old repair rounds past the budget and refuses to send a
// request that still cannot fit; `scifi ask` sends the help text and the README first, then the
// pages the question names, each whole while it fits, and names the documents it left out (to the
// model and on stderr).
// Doc promise: docs/models.md "Context windows": "Every request the runner sends fits its model's
// context window less the reply's reservation", and a reservation that would leave the prompt less
// than a quarter of the window "is lowered to a quarter of the window"; issue 41: the cluster
// user's 32k-token vLLM model.
// What happened: the helpers were single calls outside any budget, with their own `max_tokens`:
// - `scifi ask` put every document (README.md and docs/*.md, about 450 KB: 122,722 tokens as the
//   scripted model counts them) into its system prompt: with any model of a window under about
//   126,000 tokens every question was refused as too long; nothing was left out to fit.
// - `scifi make-task` (8,000), `make-skill` (6,000), `oracle` (4,000) and `ask` (3,000) sent a
//   fixed `max_tokens` whatever the entry's reservation: with a vLLM at `--max-model-len 8192`
//   (reservation lowered to 2,048) make-task's 8,000 left a prompt 192 tokens: every draft was
//   refused ("'max_tokens' or 'max_completion_tokens' is too large").
// (The attacker's ask test wanted an empty stderr; ask always names its audit tape there, so it
// checks what stderr says instead: the tape, the left-out documents, no refusal.)
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { CallRecord } from "../../runner/audit/types.ts";
import { readTape } from "../../runner/audit/verify.ts";
import { askScifi } from "../../runner/helpers/ask/ask.ts";
import { runAsk } from "../../runner/helpers/ask/command.ts";
import { sourceDocuments } from "../../runner/helpers/ask/sources.ts";
import { runMakeTask } from "../../runner/helpers/make-task/command.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { sent } from "../attack/a41c-pass.ts";

const FIXTURES = join(import.meta.dirname, "..", "fixtures", "helpers");

/** A fixture script with a `context_window` (scripted model). */
function windowed(fixture: string, window: number): string {
  const file = join(mkdtempSync(join(tmpdir(), "a41c-helper-")), "script.yaml");
  writeFileSync(file, `context_window: ${window}\n${readFileSync(join(FIXTURES, fixture), "utf8")}`);
  return file;
}

it("a41c: scifi ask answers on a model with a 32,768-token window (scripted)", async () => {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runAsk("how do I check a task file before running it?", {
    model: `scripted:${windowed("ask/cites.yaml", 32_768)}`,
    env: { ...process.env, SCIFI_HOME: mkdtempSync(join(tmpdir(), "a41c-ask-")) },
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  });
  const stderr = err.join("");
  expect(stderr).not.toMatch(/refused|too long|Error/);
  expect(code).toBe(0);
  expect(out.join("")).toContain("scifi validate tasks/fit.md");
  // Some pages did not fit, and the user is told which.
  expect(stderr).toMatch(
    /scifi ask: \d+ of \d+ documents were left out to fit the model's context window: .*docs\/loop\.md/,
  );
  const call = tapeCalls(stderr)[0];
  expect(call?.request.maxTokens).toBeUndefined();
  expect(JSON.stringify(call?.request.system)).toContain("# Documents left out");
}, 60_000);

it("a41c: ask's request on a 32,768-token window holds the help and the README and names what it left out (scripted)", async () => {
  // The help text given here, not spawned (thirty `--help` processes are slow on a loaded machine).
  const help = {
    main: "Usage: scifi [options] [command]\n\nCommands:\n  validate  check a task file\n",
    commands: new Map([["validate", "Usage: scifi validate [options] <task...>\n\nCheck SAM files."]]),
  };
  const dir = mkdtempSync(join(tmpdir(), "a41c-ask-direct-"));
  const model = await createModel(
    `scripted:${windowed("ask/cites.yaml", 32_768)}`,
    new AuditTape(join(dir, "audit.jsonl"), { runId: "ask" }),
    { retry: { maxRetries: 0 } },
  );
  try {
    const documents = sourceDocuments(help, []);
    const result = await askScifi({
      question: "how do I check a task file before running it?",
      model,
      runId: "ask",
      documents,
      commands: ["validate"],
    });
    expect(result.flagged).toBe(false);
    expect(result.leftOut.length).toBeGreaterThan(0);
    expect(result.leftOut).not.toContain("README.md");
    expect(result.leftOut).not.toContain("help: scifi validate");
    const [call] = readTape(join(dir, "audit.jsonl")).filter((r): r is CallRecord => r.kind === "call");
    expect(sent(call as CallRecord, "anthropic") + 8192).toBeLessThanOrEqual(32_768);
    expect(call?.request.system).toContain(
      `left out to keep the request inside the model's context window: ${result.leftOut.join("; ")}`,
    );
  } finally {
    await model.close();
  }
}, 60_000);

it("a41c: scifi make-task drafts on a model with an 8,192-token window (scripted)", async () => {
  const home = mkdtempSync(join(tmpdir(), "a41c-make-task-"));
  mkdirSync(join(home, "tasks"));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runMakeTask(
    "Fit a Gaussian to the energy column of data/energies.csv and write mu and sigma to out/fit.json",
    {
      model: `scripted:${windowed("make-task/repair.yaml", 8192)}`,
      env: { ...process.env, SCIFI_HOME: home },
      cwd: home,
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    },
  );
  expect(err.join("")).toBe("");
  expect(code).toBe(0);
  // The entry's reservation (a quarter of the window, 2,048) is sent, never make-task's own 8,000.
  for (const call of tapeCalls(out.join(""))) expect(call.request.maxTokens).toBeUndefined();
  expect(tapeCalls(out.join("")).length).toBeGreaterThan(0);
}, 60_000);

/** The calls on the tape a helper names ("audit tape: PATH"). */
function tapeCalls(said: string): CallRecord[] {
  const path = /audit tape: (\S+)/.exec(said)?.[1];
  if (!path) throw new Error(`no audit tape named: ${said}`);
  return readTape(path).filter((r): r is CallRecord => r.kind === "call");
}
