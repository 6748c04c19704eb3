// The scripted model's own errors: a bad script, an exhausted queue and a failed `expect` all name
// the script file and line, and fail the call (no retry, no fallback).
import { afterEach, describe, expect, it } from "vitest";
import { createModel } from "../../runner/llm/create-model.ts";
import type { Gateway } from "../../runner/llm/gateway.ts";
import { parseScript } from "../../runner/llm/scripted/script.ts";
import { calls, freshRun, request, userText, writeScript } from "./helpers.ts";

let model: Gateway | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

describe("script parsing", () => {
  it("names the line of an unknown role, with a suggestion", () => {
    expect(() => parseScript(`work:\n  - text: hi\nreveiw:\n  - text: x\n`, "demo.yaml")).toThrow(
      "demo.yaml:3: unknown role 'reveiw' (did you mean 'review'?); roles: prescan, work, review, final_review, make_task, make_skill, ask, oracle, evolve, tracer, critique",
    );
  });

  it("names the line and field of a bad reply", () => {
    expect(() =>
      parseScript(`work:\n  - text: hi\n  - tool_calls:\n      - input: {}\n`, "demo.yaml"),
    ).toThrow(/^demo\.yaml:3: bad reply for role 'work' at 'tool_calls\.0\.name'/);
    expect(() => parseScript(`work:\n  - text: hi\n    colour: red\n`, "demo.yaml")).toThrow(
      /^demo\.yaml:2: bad reply/,
    );
  });

  it("reports invalid YAML with its line", () => {
    expect(() => parseScript(`work:\n  - text: "unclosed\n`, "demo.yaml")).toThrow(
      /^demo\.yaml:\d+: invalid YAML/,
    );
  });
});

describe.each(["scripted", "scripted-openai"])("script errors at run time (%s)", (scheme) => {
  it("an exhausted queue fails the call with the role's line", async () => {
    const file = writeScript(`# demo\nreview:\n  - text: fine\nwork:\n  - text: only one\n`);
    const run = freshRun();
    model = await createModel(`${scheme}:${file}`, run.tape);
    await model.complete(request({ messages: [userText("a")] }));
    await expect(model.complete(request({ messages: [userText("b")] }))).rejects.toMatchObject({
      name: "ScriptError",
      message: expect.stringContaining(`${file}:4: role 'work' has no reply left (all 1 used`),
    });
    const failed = calls(run.tapePath)[1];
    expect(failed?.error?.message).toContain(`${file}:4`);
    expect(failed?.attempts).toEqual([]);
  });

  it("an expect that does not match fails the call with the reply's line", async () => {
    const file = writeScript(`work:\n  - text: first\n  - expect: "fix the unit test"\n    text: second\n`);
    const run = freshRun();
    model = await createModel(`${scheme}:${file}`, run.tape);
    await model.complete(request({ messages: [userText("start")] }));
    await expect(
      model.complete(request({ messages: [userText("review said: fix the docs")] })),
    ).rejects.toThrow(`${file}:3: the 'work' request does not contain "fix the unit test"`);
  });

  it("an expect regex that matches lets the reply through", async () => {
    const file = writeScript(`work:\n  - expect: { regex: "fix(es)? the (unit )?test" }\n    text: ok\n`);
    model = await createModel(`${scheme}:${file}`, freshRun().tape);
    const reply = await model.complete(request({ messages: [userText("review: fixes the test please")] }));
    expect(reply.content).toEqual([{ type: "text", text: "ok" }]);
  });
});

it("a missing script file is a clear error", async () => {
  await expect(createModel("scripted:/nonexistent/demo.yaml", freshRun().tape)).rejects.toThrow(
    /scripted model: cannot read script \/nonexistent\/demo\.yaml/,
  );
});

describe.each(["scripted", "scripted-openai"])("request checks like the real API (%s)", (scheme) => {
  it("rejects a tool result that answers no tool call of the previous assistant message", async () => {
    const file = writeScript(`work:\n  - text: a\n`);
    const run = freshRun();
    model = await createModel(`${scheme}:${file}`, run.tape);
    const history = [
      userText("go"),
      { role: "assistant" as const, content: [{ type: "text" as const, text: "thinking aloud" }] },
      {
        role: "user" as const,
        content: [{ type: "tool_result" as const, toolUseId: "toolu_lost", content: "out" }],
      },
    ];
    await expect(model.complete(request({ messages: history }))).rejects.toThrow(
      /invalid request: messages\.\d has a tool result for 'toolu_lost', which the assistant message before it did not call/,
    );
  });
});
