// Redaction works on each string's decoded text: every key shape the redactor knows, and known
// secret values, are removed wherever they stand in a string (line start, mid-line, line end,
// alone, inside JSON or code held in a string, around \n, \r\n, \t and \u escapes), on both ways
// a call reaches the tape (a full line, and an incremental record that references an earlier call);
// ordinary text that merely looks similar is left as it was.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REDACTED } from "../../runner/audit/redact.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { AuditEntry, CallRecord, TapeRequest } from "../../runner/audit/types.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";
import { cases, KEYS, leaks, ORDINARY, redactor } from "./redact-cases.ts";

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
