// Attack on the pass/fail/error split of `scifi eval` (attacker session, written from docs/eval.md
// "pass, fail, error" and docs/models.md "How a call is routed").
// Promise (docs/eval.md): a run is `error` only when the infrastructure failed (cause `sandbox`,
// cause `model`: "every model of the rank was asked and none answered", or no outcome); "an agent
// cannot make its own failure an `error`". trust.md rule 4: nothing the agent sends can crash the
// runner.
// What the agent did: its model answered with a tool call whose input is deeply nested JSON
// (`{"command": "echo hi", "x": [[[[ ... 1 ... ]]]]}`, 20,000 levels, 40 kB of model output). The
// provider here is an OpenAI-compatible server (a vLLM behind `baseURL`, as models.example.yaml
// configures one): the scripted model's replies, with the placeholder "__DEEP__" in the tool
// arguments replaced by the nested text (the scripted YAML cannot hold that depth itself).
// What happened: the adapter takes the reply (JSON.parse takes any depth); a recursive walk over
// it in the runner then overflows the stack: JSON.stringify in the tape's append (AuditTape.append
// from Gateway.#succeed for the reply itself at 20,000 levels; at 3,000 levels, from Gateway.#fail
// after the next request, whose body the adapter could not build). A RangeError ends no run, so the
// run stops with no outcome (no run_end, no check, no verdict, the reply not on the tape) and the
// trial is `error: RangeError: Maximum call stack size exceeded`, in no pass rate, and
// `--retry-errors` runs it again. Observed with both wire formats; 2,000 levels still end `fail`.
// Fixed (AE-9): the adapters bound a tool input to 64 levels (runner/llm/providers/shared.ts
// toolInputOf): a deeper one becomes `{ _unparsed_arguments: "(not run: ...)" }`, which no tool
// takes, so the agent reads why and the run goes on; a structured reply nested as deep is a
// StructuredOutputError; a RangeError raised while building a request is the run's refused request
// (invalid_request), not a failed connection that would read as an outage (cause `model`).
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../../runner/eval/engine.ts";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { ScriptedServer } from "../../runner/llm/scripted/server.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { outTxtTask } from "./out-txt-task.ts";

/** `[[[ ... 1 ... ]]]`: 3,000 levels already stop the run (6 kB); 20,000 stand for a hostile model. */
const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

const TASK = outTxtTask("eval-deep");

const SCRIPT = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "x", direction: "x" }
work:
  - tool_calls:
      - name: bash
        input: { command: "echo hi", x: "__DEEP__" }
  - tool_calls:
      - name: report_done
        input: { claim: "done.", summary: "done" }
  - tool_calls:
      - name: report_done
        input: { claim: "done.", summary: "done" }
review:
  - json:
      items:
        - { id: root/e1, pass: false, evidence: "out.txt is missing" }
      findings: []
      fixes: []
      rank_adjustment: 0
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

/** Forwards to the scripted server; its answers get the deep value in place of the placeholder. */
function deepProxy(target: string, deep: string): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const up = httpRequest(
        `${target}${req.url}`,
        { method: req.method, headers: { ...req.headers, host: new URL(target).host } },
        (upRes) => {
          const body: Buffer[] = [];
          upRes.on("data", (c: Buffer) => body.push(c));
          upRes.on("end", () => {
            const text = Buffer.concat(body)
              .toString("utf8")
              .replaceAll('\\"__DEEP__\\"', deep)
              .replaceAll('"__DEEP__"', deep);
            res.writeHead(upRes.statusCode ?? 500, {
              "content-type": "application/json",
              "content-length": Buffer.byteLength(text),
            });
            res.end(text);
          });
        },
      );
      up.on("error", () => res.destroy());
      up.end(Buffer.concat(chunks));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** An eval of the task against the scripted replies behind `provider` with the value nested `depth` deep. */
async function trial(root: string, provider: "openai" | "anthropic", depth: number): Promise<TrialResult> {
  const dir = mkdtempSync(join(root, `${provider}-${depth}-`));
  const scripted = await ScriptedServer.start(join(root, "deep.yaml"));
  const proxy = await deepProxy(scripted.baseURL, nested(depth));
  try {
    const port = (proxy.address() as AddressInfo).port;
    const base = `http://127.0.0.1:${port}${provider === "openai" ? "/v1" : ""}`;
    const entry = (rank: number) =>
      `  - { name: hostile-r${rank}, provider: ${provider}, model: hostile, baseURL: "${base}", rank: ${rank}, kinds: [control, work], prices: { input: 0, output: 0 }, noApiKey: true }\n`;
    writeFileSync(
      join(dir, "models.yaml"),
      `models:\n${[1, 2, 3].map(entry).join("")}retry: { maxRetries: 1, baseDelayMs: 1, maxDelayMs: 10, timeoutMs: 60000 }\n`,
    );
    writeFileSync(
      join(dir, "suite.yaml"),
      `tasks: [${join(root, "tasks", "deep")}]\nmodels:\n  - { name: deep, spec: ${join(dir, "models.yaml")} }\nrepeats: 1\nconcurrency: 1\n`,
    );
    const home = join(dir, "home");
    mkdirSync(home);
    await runEval({ home, suite: join(dir, "suite.yaml") });
    const evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    return JSON.parse(readFileSync(evalFiles(evalDir).result("deep.default.deep.r0"), "utf8")) as TrialResult;
  } finally {
    proxy.close();
    await scripted.close();
  }
}

describe.skipIf(!hasEngine("docker"))("scifi eval: a model's deeply nested tool input", () => {
  let root: string;
  beforeAll(async () => {
    await ensureImage();
    root = mkdtempSync(join(tmpdir(), "model-outage-deep-"));
    mkdirSync(join(root, "tasks", "deep"), { recursive: true });
    writeFileSync(join(root, "tasks", "deep", "task.md"), TASK);
    writeFileSync(join(root, "deep.yaml"), SCRIPT);
  }, 1_800_000);

  it("control: the same replies nested 10 deep are a failure of the task", async () => {
    const result = await trial(root, "openai", 10);
    expect(`${result.status}: ${result.cause}`).toMatch(/^fail: /);
  }, 600_000);

  it.each([
    ["openai", 20_000],
    ["anthropic", 20_000],
    ["openai", 3_000],
  ] as const)(
    "nested deep (%s wire format, %i levels): the call is refused with a reason the agent reads, the trial is a failure",
    async (provider, depth) => {
      const result = await trial(root, provider, depth);
      // Before the fix: "error: RangeError: Maximum call stack size exceeded" (the run has no outcome).
      expect(`${result.status}: ${result.cause}`).toMatch(/^fail: /);
      // The tape holds the tool result the agent got for the call, and no nesting past the bound.
      const tape = readFileSync(join(result.runDir, "audit.jsonl"), "utf8");
      expect(tape).toContain("not run: the input nests more than 64 levels deep");
      expect(tape).not.toContain("[".repeat(100));
    },
    600_000,
  );
});
