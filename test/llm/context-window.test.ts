// The scripted model's context window: a request past it is refused with the real providers' HTTP
// 400, in both wire formats and through both real SDKs, before any reply of the script is used.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { parseScript, ScriptError } from "../../runner/llm/scripted/script.ts";
import { ROLE_HEADER, ScriptedServer } from "../../runner/llm/scripted/server.ts";

const script = (window: number) =>
  parseScript(`context_window: ${window}\nwork:\n  - text: first\n  - text: second\n`, "/tmp/window.yaml");

let server: ScriptedServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const headers = { [ROLE_HEADER]: "work" };
const words = (n: number) => "word ".repeat(n); // 5 characters a word: about 1.25 tokens

describe("a script's context_window", () => {
  it("refuses an Anthropic request past the window with the real error, and uses no reply", async () => {
    server = await ScriptedServer.start(script(1000));
    const client = new Anthropic({ baseURL: server.baseURL, apiKey: "scripted", maxRetries: 0 });
    const call = (text: string, max_tokens = 10) =>
      client.messages.create(
        { model: "m", max_tokens, messages: [{ role: "user", content: text }] },
        { headers },
      );
    const error = await call(words(2000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Anthropic.APIError);
    const api = error as InstanceType<typeof Anthropic.APIError>;
    expect(api.status).toBe(400);
    expect(api.error).toMatchObject({
      type: "error",
      error: {
        type: "invalid_request_error",
        message: expect.stringMatching(/^prompt is too long: \d+ tokens > 1000 maximum$/),
      },
    });
    // The prompt fits but its reservation does not: Anthropic's other wording.
    const reserved = (await call(words(400), 900).catch((e: unknown) => e)) as InstanceType<
      typeof Anthropic.APIError
    >;
    expect(reserved.status).toBe(400);
    expect(reserved.message).toMatch(/input length and `max_tokens` exceed context limit: \d+ \+ 900 > 1000/);
    expect(server.refusedForLength).toBe(2);
    // No reply was used by the refused requests: the first fitting request gets the first reply.
    const ok = await call("short");
    expect(ok.content).toEqual([expect.objectContaining({ type: "text", text: "first" })]);
    expect(server.remaining()).toEqual({ work: 1 });
  });

  it("refuses an OpenAI request past the window with context_length_exceeded", async () => {
    server = await ScriptedServer.start(script(1000));
    const client = new OpenAI({ baseURL: `${server.baseURL}/v1`, apiKey: "scripted", maxRetries: 0 });
    const call = (text: string, max_tokens?: number) =>
      client.chat.completions.create(
        { model: "m", messages: [{ role: "user", content: text }], ...(max_tokens ? { max_tokens } : {}) },
        { headers },
      );
    const error = (await call(words(2000)).catch((e: unknown) => e)) as InstanceType<typeof OpenAI.APIError>;
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect(error.status).toBe(400);
    expect(error.code).toBe("context_length_exceeded");
    expect(error.type).toBe("invalid_request_error");
    expect(error.param).toBe("messages");
    expect(error.message).toMatch(
      /This model's maximum context length is 1000 tokens\. However, your messages resulted in \d+ tokens\./,
    );
    const reserved = (await call(words(400), 900).catch((e: unknown) => e)) as InstanceType<
      typeof OpenAI.APIError
    >;
    expect(reserved.code).toBe("context_length_exceeded");
    expect(reserved.message).toMatch(
      /However, you requested \d+ tokens \(\d+ in the messages, 900 in the completion\)/,
    );
    const ok = await call("short");
    expect(ok.choices[0]?.message.content).toBe("first");
  });

  it("without a window any request fits", async () => {
    server = await ScriptedServer.start(parseScript("work:\n  - text: first\n", "/tmp/nowindow.yaml"));
    const client = new Anthropic({ baseURL: server.baseURL, apiKey: "scripted", maxRetries: 0 });
    const ok = await client.messages.create(
      { model: "m", max_tokens: 4_000, messages: [{ role: "user", content: words(50_000) }] },
      { headers },
    );
    expect(ok.content[0]).toMatchObject({ text: "first" });
  });

  it.each([
    [
      "context_window: 0\nwork: []\n",
      /context_window must be a whole number of tokens \(at least 1\), not 0/,
    ],
    [
      "context_window: big\nwork: []\n",
      /context_window must be a whole number of tokens \(at least 1\), not "big"/,
    ],
    ["context_window: 1.5\nwork: []\n", /not 1\.5/],
    ["context_windwo: 10\nwork: []\n", /unknown role 'context_windwo' \(did you mean 'context_window'\?\)/],
  ])("refuses a bad setting %#, naming the line", (source, message) => {
    expect(() => parseScript(source, "/tmp/bad.yaml")).toThrow(ScriptError);
    expect(() => parseScript(source, "/tmp/bad.yaml")).toThrow(message);
    expect(() => parseScript(source, "/tmp/bad.yaml")).toThrow(/^\/tmp\/bad\.yaml:1: /);
  });
});
