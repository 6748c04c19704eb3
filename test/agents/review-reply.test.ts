// A review verdict of the wrong shape: the retry that gets no scripted reply reports the verdict that
// did not fit (its script line, its field), not only "no reply left".
import { describe, expect, it } from "vitest";
import { ReviewFailed, runReview } from "../../runner/agents/run-review.ts";
import { ScriptError } from "../../runner/llm/scripted/script.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";

const SAM = "# Fit\n\n## To-do\nFit.\n\n## Expectation\n- fit.json holds the fit.\n- fit.png shows it.\n";

describe("review verdict shape", () => {
  it("names the verdict's reply line and field when the retry has no reply", async () => {
    const parsed = parseSamString(SAM, "/tmp/task.md");
    if (!parsed.ok) throw new Error("bad SAM");
    let calls = 0;
    const error = await runReview({
      node: parsed.sam.root,
      work: { exit: "none" },
      checks: [],
      // The review's sandbox is not used by this conversation; only stopped.
      openSandbox: async () => ({ stop: async () => undefined }) as unknown as Sandbox,
      converse: async () => {
        calls++;
        if (calls > 1) throw new ScriptError("scripted model: demo.yaml:20: role 'review' has no reply left");
        return { json: { verdict: "pass", fixes: [] }, text: "", origin: "demo.yaml:21" };
      },
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ReviewFailed);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^the review agent's verdict did not fit: reply demo\.yaml:21: items: Invalid input: expected array/,
    );
    expect(message).toContain(
      "the retry got no answer: scripted model: demo.yaml:20: role 'review' has no reply left",
    );
  });
});
