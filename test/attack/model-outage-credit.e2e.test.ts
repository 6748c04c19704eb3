// Attack on the pass/fail/error split of `scifi eval`, the other way round (attacker session,
// written from docs/eval.md "pass, fail, error" and docs/models.md "How a call is routed", item 4):
// a provider outage counted as the task's failure.
// Promise (docs/eval.md): "a run no model could answer though each of its rank was asked (outcome
// cause `model`, a provider outage or a refused key ...) [is] `error`: the task was not judged".
// What happened: the Anthropic API refuses every request of an account whose credit ran out with
// HTTP 400 `invalid_request_error` ("Your credit balance is too low to access the Anthropic API.
// Please go to Plans & Billing to upgrade or purchase credits."; seen in anthropics/claude-code
// issues #4208, #66314, #91322). The gateway reads every 400 as a request the provider refused as
// invalid (RequestRefused, "A prompt past the model's context window is the usual cause"), so the
// run ends failed without cause and the trial is `fail`: a model that was never asked to do the
// task gets 0 of n, in the pass rate, and `--retry-errors` does not run it again once the account
// is topped up. The scripted model answers the work call with that 400 here; nothing the agent did
// is involved.
// Fixed (AE-9): a 400 whose API message starts "Your credit balance is too low" / "Usage is blocked
// due to ... credits", a 402, an error type `billing_error` or code `insufficient_quota` is reason
// `billing` (runner/llm/errors.ts): that model's outage, like a refused key (fall back, then
// ModelsUnreachable, cause `model`), not RequestRefused.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runEval } from "../../runner/eval/engine.ts";
import { evalFiles } from "../../runner/eval/plan.ts";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { outTxtTask } from "./out-txt-task.ts";

const TASK = outTxtTask("eval-credit");

const SCRIPT = `prescan:
  - json: { node: root, rank: 1, skills: [], context: "", plan: "p", direction: "d" }
work:
  - status: 400
    message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."
final_review:
  - json: { group_suggestions: [], global_suggestions: [] }
`;

describe.skipIf(!hasEngine("docker"))("scifi eval: the provider refuses an account without credit", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("the trial is an infrastructure error (cause model), not a failure of the task", async () => {
    const root = mkdtempSync(join(tmpdir(), "model-outage-credit-"));
    mkdirSync(join(root, "tasks", "credit"), { recursive: true });
    writeFileSync(join(root, "tasks", "credit", "task.md"), TASK);
    writeFileSync(join(root, "credit.yaml"), SCRIPT);
    writeFileSync(
      join(root, "suite.yaml"),
      "tasks: [tasks/credit]\nmodels:\n  - { name: credit, spec: scripted:credit.yaml }\nrepeats: 1\nconcurrency: 1\n",
    );
    const home = join(root, "home");
    mkdirSync(home);
    await runEval({ home, suite: join(root, "suite.yaml"), retry: { maxRetries: 0, baseDelayMs: 1 } });
    const evalDir = join(home, "evals", readdirSync(join(home, "evals"))[0] as string);
    const result = JSON.parse(
      readFileSync(evalFiles(evalDir).result("credit.default.credit.r0"), "utf8"),
    ) as TrialResult;
    // Before the fix: "fail: model refused the request: scripted-credit refused the request as invalid (HTTP 400) ...".
    expect(result.status).toBe("error");
    expect(result.cause).toMatch(/^no model: .*tried scripted-credit: billing/);
  }, 600_000);
});
