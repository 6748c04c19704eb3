// The audit tape's hash chain: verify passes an intact tape and names the first bad line of an
// edited, deleted, reordered or damaged one, both as a function and through `scifi audit verify`.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { AuditTape } from "../../runner/audit/tape.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";

const run = promisify(execFile);
const BIN = join(import.meta.dirname, "..", "..", "bin", "scifi.js");

function tapeWith(records: number): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-tape-"));
  const path = join(dir, "audit.jsonl");
  const tape = new AuditTape(path, { runId: "r1" });
  for (let i = 0; i < records; i++) tape.append({ kind: "event", event: `step ${i}`, data: { i } });
  tape.close();
  return path;
}

function lines(path: string): string[] {
  return readFileSync(path, "utf8").trimEnd().split("\n");
}

function rewrite(path: string, edit: (lines: string[]) => string[]): void {
  writeFileSync(path, `${edit(lines(path)).join("\n")}\n`);
}

async function scifi(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("hash chain", () => {
  it("chains seq and prev and verifies an intact tape", () => {
    const path = tapeWith(4);
    const records = readTape(path);
    expect(records.map((r) => r.seq)).toEqual([0, 1, 2, 3]);
    expect(records[0]?.prev).toBeNull();
    expect(records[1]?.prev).toMatch(/^[0-9a-f]{64}$/);
    expect(verifyTape(path)).toEqual({ ok: true, records: 4 });
  });

  it("continues the chain when a tape is reopened (resume)", () => {
    const path = tapeWith(2);
    const tape = new AuditTape(path, { runId: "r1" });
    tape.append({ kind: "event", event: "resumed" });
    tape.close();
    expect(readTape(path).map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(verifyTape(path).ok).toBe(true);
  });

  it("finds an edited line", () => {
    const path = tapeWith(4);
    rewrite(path, (l) => l.map((line, i) => (i === 2 ? line.replace('"step 2"', '"step two"') : line)));
    expect(verifyTape(path)).toMatchObject({ ok: false, line: 3, reason: expect.stringMatching(/edited/) });
  });

  it("finds an edited line whose own hash was recomputed, at the next line", async () => {
    const path = tapeWith(4);
    const { sealLine } = await import("../../runner/audit/chain.ts");
    rewrite(path, (l) =>
      l.map((line, i) => {
        if (i !== 1) return line;
        const { hash: _hash, ...rest } = JSON.parse(line) as Record<string, unknown>;
        return sealLine(JSON.stringify({ ...rest, event: "forged" }));
      }),
    );
    expect(verifyTape(path)).toMatchObject({
      ok: false,
      line: 3,
      reason: expect.stringMatching(/prev does not match/),
    });
  });

  it("finds a deleted line", () => {
    const path = tapeWith(4);
    rewrite(path, (l) => l.filter((_, i) => i !== 1));
    expect(verifyTape(path)).toMatchObject({ ok: false, line: 2, reason: expect.stringMatching(/deleted/) });
  });

  it("finds reordered lines", () => {
    const path = tapeWith(4);
    rewrite(path, (l) => [l[0], l[2], l[1], l[3]].map(String));
    expect(verifyTape(path)).toMatchObject({
      ok: false,
      line: 2,
      reason: expect.stringMatching(/seq 2 where 1/),
    });
  });

  it("finds a damaged (non-JSON) line", () => {
    const path = tapeWith(3);
    rewrite(path, (l) => [l[0] ?? "", (l[1] ?? "").slice(0, 30), l[2] ?? ""]);
    expect(verifyTape(path)).toMatchObject({
      ok: false,
      line: 2,
      reason: expect.stringMatching(/not valid JSON/),
    });
  });

  it("refuses to append to a tape whose last line is damaged", () => {
    const path = tapeWith(2);
    writeFileSync(path, `${readFileSync(path, "utf8")}{"seq":2,"trunc`);
    expect(() => new AuditTape(path, { runId: "r1" })).toThrow(/ends with an unreadable line/);
  });
});

describe("scifi audit verify", () => {
  it("exits 0 on an intact tape and 1 with the first bad line otherwise", async () => {
    const path = tapeWith(3);
    const ok = await scifi("audit", "verify", join(path, ".."));
    expect(ok).toMatchObject({ code: 0 });
    expect(ok.stdout).toMatch(
      new RegExp(`^${path}: intact, 3 records; not anchored: no state\\.json next to the tape`),
    );
    rewrite(path, (l) => l.filter((_, i) => i !== 0));
    const bad = await scifi("audit", "verify", path);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe(`${path}:1: seq 1 where 0 was expected: 1 line(s) before it were deleted\n`);
    const json = await scifi("audit", "verify", path, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, line: 1 });
  });

  it("finds a run by id under SCIFI_HOME and exits 2 for an unknown run", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-home-"));
    const tape = new AuditTape(join(home, "runs", "run-42", "audit.jsonl"), { runId: "run-42" });
    tape.append({ kind: "event", event: "start" });
    tape.close();
    const env = { ...process.env, SCIFI_HOME: home };
    const found = await promisify(execFile)(process.execPath, [BIN, "audit", "verify", "run-42"], { env });
    expect(found.stdout).toContain("intact, 1 records");
    const missing = await promisify(execFile)(process.execPath, [BIN, "audit", "verify", "run-43"], {
      env,
    }).catch((e: { code: number; stderr: string }) => e);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringContaining("no audit tape for 'run-43'") });
  });
});

it("flush() resolves once every record is synced, and close() syncs too", async () => {
  const dir = mkdtempSync(join(tmpdir(), "scifi-tape-"));
  const tape = new AuditTape(join(dir, "audit.jsonl"), { runId: "r" });
  for (let i = 0; i < 20; i++) tape.append({ kind: "event", event: `e${i}` });
  await tape.flush();
  expect(tape.syncError).toBeUndefined();
  tape.close();
  expect(() => tape.append({ kind: "event", event: "late" })).toThrow(/is closed/);
  expect(verifyTape(join(dir, "audit.jsonl"))).toEqual({ ok: true, records: 20 });
});
