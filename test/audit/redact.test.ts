// Redaction works on each string's decoded text: every key shape the redactor knows, and known
// secret values, are removed wherever they stand in a string (line start, mid-line, line end,
// alone, inside JSON or code held in a string, around \n, \r\n, \t and \u escapes), on both ways
// a call reaches the tape (a full line, and an incremental record that references an earlier call);
// ordinary text that merely looks similar is left as it was.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REDACTED, Redactor } from "../../runner/audit/redact.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { AuditEntry, CallRecord, TapeRequest } from "../../runner/audit/types.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";

/** Every key shape of redact.ts's pattern list, and known values; each holds the word PLANTED. */
const KEYS: Record<string, string> = {
  anthropic: "sk-ant-api03-PLANTEDanthropic0123456789abcdef",
  openai: "sk-proj-PLANTEDopenai0123456789abcdef",
  "slack xoxa": "xoxa-PLANTEDslack0123456789ab",
  "slack xoxb": "xoxb-PLANTEDslack0123456789ab",
  "slack xoxp": "xoxp-PLANTEDslack0123456789ab",
  "slack xoxr": "xoxr-PLANTEDslack0123456789ab",
  "github ghp": "ghp_PLANTEDgithub0123456789abcdef",
  "github gho": "gho_PLANTEDgithub0123456789abcdef",
  "github pat": "github_pat_PLANTEDgithub0123456789abcdef",
  gitlab: "glpat-PLANTEDgitlab0123456789ab",
  aws: "AKIAPLANTEDAWS012345",
  bearer: "Bearer PLANTEDbearer.token.sig",
  "bearer after a tab": "Bearer\tPLANTEDbearer.token.sig",
  "known value": "PLANTED-known-value-7f3c9a",
  'known value with " and \\': 'lab"pw\\PLANTED-Zq8',
  "env var named secret": "PLANTED-env-secret-42",
};

const redactor = () =>
  new Redactor({
    env: { LAB_DB: KEYS["env var named secret"] },
    secretEnvNames: ["LAB_DB"],
    values: [KEYS["known value"] ?? "", KEYS['known value with " and \\'] ?? ""],
  });

/** Decoded strings holding the key `k` in every position and next to every kind of escape. */
function contexts(k: string): Record<string, string> {
  return {
    alone: k,
    "line start": `${k}\nnext line`,
    "line start after a line": `first line\n${k}\nnext line`,
    "mid-line": `export KEY=x; echo ${k} done`,
    "line end": `the key is ${k}\nnext`,
    "text end": `first line\n${k}`,
    "\\r\\n": `a\r\n${k}\r\nb`,
    "\\t": `col\t${k}\tcol`,
    "\\u000b (written as \\u escape)": `a\u000b${k}\u000bb`,
    "\\u2028": `a\u2028${k}`,
    "literal \\n (code in a string)": `print("a\\n${k}")`,
    "literal \\r\\n": `a\\r\\n${k}`,
    "literal \\t": `a\\t${k}`,
    "literal \\u000a": `a\\u000a${k}`,
    "nested JSON": JSON.stringify({ env: `X=1\n${k}\n`, list: [k] }),
    "JSON in JSON": JSON.stringify(JSON.stringify({ env: `${k}\r\n` })),
  };
}

/** Ordinary text near the key shapes, which must pass unchanged. */
const ORDINARY = [
  "task-runner-for-the-whole-lab-abc",
  "first line\ntask-runner-for-the-whole-lab-abc",
  "risk-assessment-of-the-whole-project",
  "a\\ntask-runner-for-the-whole-lab-abc",
  "the Bearer of bad news",
  "ghp and gho are prefixes; AKIA too",
  "C:\\new\\skills\\file.txt",
  "café\nmaskless-frobnication-routine",
  'JSON {"a":"b\\n","c":[1,2]} \u2028 ünïcödé \u0001',
];

/** The surroundings of every planted key left in `text` (short, so a failure names the case). */
function leaks(text: string): string[] {
  return [...text.matchAll(/PLANTED/g)].map((m) => text.slice(Math.max(0, m.index - 40), m.index + 20));
}

const cases = Object.entries(KEYS).flatMap(([shape, key]) =>
  Object.entries(contexts(key)).map(([where, text]) => ({ shape, where, text })),
);

describe("redaction of decoded strings", () => {
  it.each(cases)("$shape at $where: removed from the text and from JSON", ({ text }) => {
    const r = redactor();
    expect(leaks(r.text(text))).toEqual([]);
    expect(r.text(text)).toContain(REDACTED);
    const json = r.json(JSON.stringify({ [text]: text, nested: { list: ["x", text] } }));
    expect(leaks(json)).toEqual([]);
    // Still JSON, and only the key was replaced: the rest of the string is intact.
    const back = JSON.parse(json) as { nested: { list: string[] } };
    expect(back.nested.list).toEqual(["x", r.text(text)]);
  });

  it("keeps the text around a key", () => {
    const r = redactor();
    const key = KEYS.anthropic ?? "";
    expect(r.text(`${key}\nnext`)).toBe(`${REDACTED}\nnext`);
    expect(r.text(`a\\u000a${key}"`)).toBe(`a\\u000a${REDACTED}"`);
    expect(r.json(JSON.stringify([`x\r\n${key}\tz`]))).toBe(JSON.stringify([`x\r\n${REDACTED}\tz`]));
  });

  it.each(ORDINARY)("leaves ordinary text untouched: %j", (text) => {
    const r = redactor();
    expect(r.text(text)).toBe(text);
    const json = JSON.stringify({ text, [text]: [text] });
    expect(r.json(json)).toBe(json);
  });
});

describe("redaction on both tape write paths", () => {
  const usage = { input: 0, output: 0, cacheWrite: 0, cacheRead: 0, reasoning: 0 };
  const call = (request: TapeRequest, wire: unknown): AuditEntry => ({
    kind: "call",
    role: "work",
    provider: "scripted",
    model: "m",
    entry: "e",
    request,
    wire,
    usage,
    costUsd: 0,
    latencyMs: 0,
    attempts: [],
  });
  const text = (t: string) => ({ role: "user" as const, content: [{ type: "text" as const, text: t }] });
  /** The wire body repeats the request's messages; long texts become `{"$s": path}` references. */
  const wireOf = (request: TapeRequest) => ({
    messages: request.messages.map((m) => ({ role: m.role, content: m.content.map((b) => ({ ...b })) })),
  });
  const padded = (t: string) => `${"log line\n".repeat(40)}${t}`;

  it("removes every key in every position from a full line and from an incremental one", () => {
    const path = join(mkdtempSync(join(tmpdir(), "scifi-redact-")), "audit.jsonl");
    const r = redactor();
    const tape = new AuditTape(path, { runId: "r1", redactor: r });
    const all = cases.map((c) => c.text);
    const half = Math.floor(all.length / 2);
    // Call 0: a full line. Call 1: references call 0's messages and adds the rest.
    const first: TapeRequest = {
      kind: "work",
      rank: 1,
      system: `system ${KEYS.openai}\n${KEYS.aws}`,
      messages: all.slice(0, half).map((t) => text(padded(t))),
    };
    const second: TapeRequest = {
      ...first,
      messages: [...first.messages, ...all.slice(half).map((t) => text(padded(t)))],
    };
    tape.append(call(first, wireOf(first)));
    tape.append({ kind: "event", event: "note", data: { lines: all } });
    tape.append(call(second, wireOf(second)));
    tape.close();

    const raw = readFileSync(path, "utf8");
    expect(leaks(raw)).toEqual([]);
    const lines = raw.trimEnd().split("\n");
    expect(lines[2]).toMatch(/"messages":\{"\$from":0,"count":\d+,"add":/);
    expect(lines[2]).toMatch(/\{"\$s":\["messages",\d+,"content",0,"text"\]\}/);
    expect(verifyTape(path)).toMatchObject({ ok: true });
    const calls = readTape(path).filter((c): c is CallRecord => c.kind === "call");
    expect(calls.map((c) => c.request)).toEqual([r.value(first), r.value(second)]);
    expect(calls.map((c) => c.wire)).toEqual([r.value(wireOf(first)), r.value(wireOf(second))]);
    expect(JSON.stringify(calls[1]?.request).match(/\[REDACTED\]/g)?.length).toBeGreaterThanOrEqual(
      all.length,
    );
  });

  it("writes ordinary text on both paths exactly as sent", () => {
    const path = join(mkdtempSync(join(tmpdir(), "scifi-redact-")), "audit.jsonl");
    const tape = new AuditTape(path, { runId: "r1", redactor: redactor() });
    const first: TapeRequest = {
      kind: "work",
      rank: 1,
      system: "s",
      messages: [text(padded(ORDINARY[0] ?? ""))],
    };
    const second = { ...first, messages: [...first.messages, ...ORDINARY.map((t) => text(padded(t)))] };
    tape.append(call(first, wireOf(first)));
    tape.append(call(second, wireOf(second)));
    tape.close();
    expect(readFileSync(path, "utf8")).not.toContain(REDACTED);
    const calls = readTape(path).filter((c): c is CallRecord => c.kind === "call");
    expect(calls.map((c) => c.request)).toEqual([first, second]);
    expect(calls.map((c) => c.wire)).toEqual([wireOf(first), wireOf(second)]);
  });
});
