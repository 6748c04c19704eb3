// The export's guard: the tape's redaction cases again (the export redacts with the same Redactor,
// so a key that reached a tape before its shape was known, or a value named only at export time,
// still does not leave), host paths rewritten at path boundaries only, and the content of a hidden
// asset found in every form JSON text can hold it.
import { describe, expect, it } from "vitest";
import { REDACTED } from "../../runner/audit/redact.ts";
import { ExportGuard, ExportRefused } from "../../runner/export/guard.ts";
import { cases, leaks, ORDINARY, redactor } from "../audit/redact-cases.ts";

describe("export guard: redaction", () => {
  it.each(cases)("$shape at $where: removed from exported JSON", ({ text }) => {
    const guard = new ExportGuard({ redactor: redactor() });
    const out = guard.json(JSON.stringify({ message: text, nested: [{ content: text }] }), "test");
    expect(leaks(out)).toEqual([]);
    expect(out).toContain(REDACTED);
    expect(guard.redactions).toBeGreaterThan(0);
  });

  it.each(ORDINARY)("leaves ordinary text as it was: %j", (text) => {
    const json = JSON.stringify({ message: text });
    expect(new ExportGuard({ redactor: redactor() }).json(json, "test")).toBe(json);
  });
});

describe("export guard: host paths", () => {
  const guard = new ExportGuard({
    paths: [
      { from: "/tmp/w/task", to: "/task" },
      { from: "/tmp/w/home/runs/r1", to: "<run>" },
      { from: "/root", to: "<home>" },
    ],
  });
  const text = (value: unknown) => JSON.parse(guard.json(JSON.stringify(value), "test")) as unknown;

  it("rewrites the task folder to the agent's path and other host folders to placeholders", () => {
    expect(
      text({ a: "/tmp/w/task/src/sum.c", b: "cd /tmp/w/home/runs/r1 && ls", c: "/root/.cache" }),
    ).toEqual({
      a: "/task/src/sum.c",
      b: "cd <run> && ls",
      c: "<home>/.cache",
    });
  });

  it("rewrites inside JSON held in a string and after an escape written as text", () => {
    const nested = JSON.stringify({ path: "/tmp/w/task/x" });
    expect(text({ a: nested, b: "line\\n/root/y" })).toEqual({
      a: JSON.stringify({ path: "/task/x" }),
      b: "line\\n<home>/y",
    });
  });

  it("leaves a name that merely contains a host folder's text", () => {
    expect(text({ a: "run-1/root/e1", b: "/rootfs/x", c: "/tmp/w/tasks" })).toEqual({
      a: "run-1/root/e1",
      b: "/rootfs/x",
      c: "/tmp/w/tasks",
    });
  });
});

describe("export guard: hidden assets", () => {
  const content = '{"marker": "HIDDEN-REF-c4f1a9e27b",\n "input": 150}\n';
  const guard = () => new ExportGuard({ hidden: [{ rel: "checks/secret.json", content }] });

  it("refuses the content as a string value, as JSON in a string, and JSON in JSON", () => {
    for (const value of [
      content,
      JSON.stringify({ out: content }),
      JSON.stringify(JSON.stringify([content])),
    ])
      expect(() => guard().json(JSON.stringify({ message: `before ${value} after` }), "step 3")).toThrow(
        /step 3 holds the content of the hidden check asset checks\/secret\.json/,
      );
  });

  it("passes text without it, and a part of it is not the whole", () => {
    const json = JSON.stringify({ message: "HIDDEN-REF-c4f1a9e27b alone is not the file" });
    expect(guard().json(json, "x")).toBe(json);
  });

  it("refuses at the start a hidden asset too short to be told apart from ordinary text", () => {
    expect(() => new ExportGuard({ hidden: [{ rel: "checks/n.txt", content: "42\n" }] })).toThrow(
      ExportRefused,
    );
  });
});
