// The anchored chain: a tape whose last lines were dropped, or whose every line was re-chained, still
// has an intact hash chain; the heads recorded outside it (state.json, the history) and the MACs of
// a site audit key catch both. As functions and through `scifi audit verify`.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { readAnchors } from "../../runner/audit/anchor.ts";
import { sealLine } from "../../runner/audit/chain.ts";
import { AuditKeyError, auditKeyFromEnv } from "../../runner/audit/key.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import type { AuditHead } from "../../runner/audit/types.ts";
import { verifyTape } from "../../runner/audit/verify.ts";
import { sha256 } from "../../runner/sha256.ts";

const run = promisify(execFile);
const BIN = join(import.meta.dirname, "..", "..", "bin", "scifi.js");
const KEY = Buffer.from("a-site-audit-key-of-32-bytes-abcd");

/** A run folder as the loop leaves it: a tape, state.json with the head, history events with heads. */
function runFolder(records: number, options: { key?: Buffer } = {}): { dir: string; tape: string } {
  const dir = mkdtempSync(join(tmpdir(), "scifi-anchor-"));
  const tape = new AuditTape(join(dir, "audit.jsonl"), { runId: "r1", key: options.key ?? null });
  const history: object[] = [];
  let head: AuditHead | undefined;
  for (let i = 0; i < records; i++) {
    tape.append({ kind: "event", event: `step ${i}`, data: { i } });
    if (i === 1)
      history.push({ seq: 1, type: "iteration_end", iteration: 1, passed: false, audit: tape.anchor() });
    head = tape.anchor();
  }
  history.push({ seq: 2, type: "run_end", outcome: "passed", reason: "ok", audit: head });
  tape.close();
  writeFileSync(join(dir, "state.json"), JSON.stringify({ version: 1, phase: "ended", auditHead: head }));
  writeFileSync(join(dir, "history.jsonl"), history.map((h) => `${JSON.stringify(h)}\n`).join(""));
  return { dir, tape: join(dir, "audit.jsonl") };
}

function lines(path: string): string[] {
  return readFileSync(path, "utf8").trimEnd().split("\n");
}

/** What someone with write access but no key does: edit a line, then seal and chain every line again. */
function rechain(path: string, edit: (record: Record<string, unknown>, index: number) => void): void {
  let prev: string | null = null;
  const out = lines(path).map((line, index) => {
    const { hash: _hash, mac: _mac, ...record } = JSON.parse(line) as Record<string, unknown>;
    record.prev = prev;
    edit(record, index);
    const sealed = sealLine(JSON.stringify(record));
    prev = sha256(sealed);
    return sealed;
  });
  writeFileSync(path, `${out.join("\n")}\n`);
}

function dropTail(path: string, count: number): void {
  writeFileSync(path, `${lines(path).slice(0, -count).join("\n")}\n`);
}

async function scifi(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = { ...process.env, SCIFI_AUDIT_KEY: "", SCIFI_AUDIT_KEY_FILE: "", ...env };
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: clean });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe("the tape's head", () => {
  it("is the last record's seq and line hash, the same after reopening; none while empty", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-anchor-"));
    const path = join(dir, "audit.jsonl");
    const tape = new AuditTape(path, { runId: "r1", key: null });
    expect(tape.head()).toBeUndefined();
    expect(tape.anchor()).toBeUndefined();
    tape.append({ kind: "event", event: "a" });
    tape.append({ kind: "event", event: "b" });
    const head = tape.anchor();
    expect(head).toEqual({ seq: 1, hash: sha256(lines(path)[1] ?? "") });
    tape.close();
    const again = new AuditTape(path, { runId: "r1", key: null });
    expect(again.head()).toEqual(head);
    again.append({ kind: "event", event: "c" });
    expect(again.head()?.seq).toBe(2);
    again.close();
  });

  it("is read back from state.json and the history", () => {
    const { dir } = runFolder(4);
    const { anchors, problems, runFolder: isRun } = readAnchors(dir);
    expect(problems).toEqual([]);
    expect(isRun).toBe(true);
    expect(anchors.map((a) => [a.source, a.seq])).toEqual([
      ["state.json", 3],
      ["history.jsonl:1", 1],
      ["history.jsonl:2", 3],
    ]);
  });
});

describe("anchored verify", () => {
  it("passes an intact tape and says what it was checked against", () => {
    const { dir, tape } = runFolder(5);
    expect(verifyTape(tape, { anchors: readAnchors(dir).anchors })).toEqual({
      ok: true,
      records: 5,
      anchors: { count: 3, seq: 4, sources: ["state.json", "history.jsonl"] },
    });
  });

  it("reports dropped tail lines, which the chain alone cannot see", () => {
    const { dir, tape } = runFolder(5);
    dropTail(tape, 2);
    expect(verifyTape(tape)).toMatchObject({ ok: true, records: 3 });
    expect(verifyTape(tape, { anchors: readAnchors(dir).anchors })).toEqual({
      ok: false,
      line: 4,
      records: 3,
      reason:
        "the tape ends after 3 record(s) but state.json recorded its head at seq 4: at least 2 record(s) at the end were dropped",
    });
  });

  it("reports a re-chained tape, which the chain alone cannot see", () => {
    const { dir, tape } = runFolder(5);
    rechain(tape, (record, index) => {
      if (index === 1) record.event = "forged";
    });
    expect(verifyTape(tape)).toMatchObject({ ok: true, records: 5 });
    const result = verifyTape(tape, { anchors: readAnchors(dir).anchors });
    expect(result).toMatchObject({ ok: false, line: 2 });
    expect(result.ok ? "" : result.reason).toMatch(
      /head recorded in history\.jsonl:1 for seq 1: the chain was rewritten/,
    );
  });

  it("catches a rewrite that also rewrote state.json, through the history's heads", () => {
    const { dir, tape } = runFolder(5);
    rechain(tape, (record, index) => {
      if (index === 3) record.event = "forged";
    });
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")) as { auditHead: AuditHead };
    state.auditHead = { seq: 4, hash: sha256(lines(tape)[4] ?? "") };
    writeFileSync(join(dir, "state.json"), JSON.stringify(state));
    const result = verifyTape(tape, { anchors: readAnchors(dir).anchors });
    expect(result).toMatchObject({ ok: false, line: 5 });
    expect(result.ok ? "" : result.reason).toMatch(/history\.jsonl:2/);
  });

  it("through the CLI: exit 0 anchored, exit 1 with the line and why after a dropped tail or a re-chain", async () => {
    const first = runFolder(4);
    const ok = await scifi(["audit", "verify", first.dir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(
      `${first.tape}: intact, 4 records; head anchored (seq 3 recorded in state.json, history.jsonl; 3 head(s) checked); no MACs (no audit key was set when it was written)\n`,
    );
    dropTail(first.tape, 1);
    const dropped = await scifi(["audit", "verify", first.dir]);
    expect(dropped.code).toBe(1);
    expect(dropped.stdout).toContain(`${first.tape}:4: the tape ends after 3 record(s)`);
    const json = await scifi(["audit", "verify", first.dir, "--json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, line: 4, records: 3 });

    const second = runFolder(4);
    rechain(second.tape, (record, index) => {
      if (index === 0) record.event = "forged";
    });
    const rechained = await scifi(["audit", "verify", second.tape]);
    expect(rechained.code).toBe(1);
    // Seq 0 is not anchored; seq 1 is (an iteration_end): the rewrite shows there.
    expect(rechained.stdout).toMatch(
      /:2: the line's hash differs from the head recorded in history\.jsonl:1/,
    );
  });

  it("an unanchored run folder verifies, and says that a dropped tail would go unseen", async () => {
    const { dir, tape } = runFolder(3);
    writeFileSync(join(dir, "state.json"), JSON.stringify({ version: 1 }));
    writeFileSync(join(dir, "history.jsonl"), "");
    const result = await scifi(["audit", "verify", tape]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("not anchored: no head recorded in state.json or the history");
  });
});

describe("a site audit key", () => {
  it("MACs every line; verify with the key checks them, without it says they were not checked", () => {
    const { tape } = runFolder(3, { key: KEY });
    for (const line of lines(tape)) expect(line).toMatch(/,"hash":"[0-9a-f]{64}","mac":"[0-9a-f]{64}"\}$/);
    expect(verifyTape(tape, { key: KEY })).toEqual({ ok: true, records: 3, macs: "verified" });
    expect(verifyTape(tape)).toEqual({ ok: true, records: 3, macs: "unchecked" });
  });

  it("catches a rewrite by someone without the key, even with state.json and the history rewritten too", () => {
    const { dir, tape } = runFolder(4, { key: KEY });
    rechain(tape, (record, index) => {
      if (index === 2) record.event = "forged";
    });
    // The forger rewrites every head outside the tape as well: the anchors then agree...
    const head = { seq: 3, hash: sha256(lines(tape)[3] ?? "") };
    writeFileSync(join(dir, "state.json"), JSON.stringify({ version: 1, auditHead: head }));
    writeFileSync(
      join(dir, "history.jsonl"),
      `${JSON.stringify({ seq: 1, type: "run_end", audit: head })}\n`,
    );
    const anchors = readAnchors(dir).anchors;
    expect(verifyTape(tape, { anchors })).toMatchObject({ ok: true });
    // ...but cannot make the MACs: the stripped MAC is seen on the first line.
    expect(verifyTape(tape, { anchors, key: KEY })).toMatchObject({
      ok: false,
      line: 1,
      reason: expect.stringMatching(/^no MAC: .*stripped/),
    });
  });

  it("a copied MAC on an edited line, or the wrong key, fails", () => {
    const { tape } = runFolder(3, { key: KEY });
    const original = lines(tape);
    const last = original[2] ?? "";
    const mac = /"mac":"([0-9a-f]{64})"/.exec(last)?.[1];
    // The last line edited and sealed again (its prev still right), its old MAC put back.
    const { hash: _hash, mac: _mac, ...record } = JSON.parse(last) as Record<string, unknown>;
    const resealed = sealLine(JSON.stringify({ ...record, event: "forged" })).replace(
      /\}$/,
      `,"mac":"${mac}"}`,
    );
    writeFileSync(tape, `${[original[0], original[1], resealed].join("\n")}\n`);
    expect(verifyTape(tape)).toMatchObject({ ok: true });
    expect(verifyTape(tape, { key: KEY })).toMatchObject({
      ok: false,
      line: 3,
      reason: expect.stringMatching(/^MAC does not match/),
    });
    const { tape: other } = runFolder(2, { key: KEY });
    expect(verifyTape(other, { key: Buffer.from("another-key-another-key-another") })).toMatchObject({
      ok: false,
      line: 1,
      reason: expect.stringMatching(/^MAC does not match/),
    });
  });

  it("comes from the environment (text or file); a short or unreadable key is an error", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-key-"));
    const file = join(dir, "audit.key");
    writeFileSync(file, `${KEY.toString()}\n`);
    expect(auditKeyFromEnv({})).toBeUndefined();
    expect(auditKeyFromEnv({ SCIFI_AUDIT_KEY: KEY.toString() })).toEqual(KEY);
    expect(
      auditKeyFromEnv({ SCIFI_AUDIT_KEY_FILE: file, SCIFI_AUDIT_KEY: "ignored-ignored-ignored" }),
    ).toEqual(KEY);
    expect(() => auditKeyFromEnv({ SCIFI_AUDIT_KEY: "short" })).toThrow(AuditKeyError);
    expect(() => auditKeyFromEnv({ SCIFI_AUDIT_KEY_FILE: join(dir, "missing") })).toThrow(/audit key file/);
    // The tape takes the environment's key when given none.
    const saved = process.env.SCIFI_AUDIT_KEY;
    process.env.SCIFI_AUDIT_KEY = KEY.toString();
    try {
      const tape = new AuditTape(join(dir, "audit.jsonl"), { runId: "r1" });
      expect(tape.keyed).toBe(true);
      tape.append({ kind: "event", event: "x" });
      tape.close();
    } finally {
      if (saved === undefined) delete process.env.SCIFI_AUDIT_KEY;
      else process.env.SCIFI_AUDIT_KEY = saved;
    }
    expect(verifyTape(join(dir, "audit.jsonl"), { key: KEY })).toMatchObject({ ok: true, macs: "verified" });
  });

  it("through the CLI: --key FILE or the environment; a bad key is a usage error", async () => {
    const { dir, tape } = runFolder(3, { key: KEY });
    const keyFile = join(dir, "audit.key");
    writeFileSync(keyFile, KEY);
    const withFile = await scifi(["audit", "verify", dir, "--key", keyFile]);
    expect(withFile.code).toBe(0);
    expect(withFile.stdout).toContain("MACs verified with the audit key");
    const withEnv = await scifi(["audit", "verify", tape], { SCIFI_AUDIT_KEY: KEY.toString() });
    expect(withEnv.stdout).toContain("MACs verified with the audit key");
    const without = await scifi(["audit", "verify", tape]);
    expect(without.stdout).toContain("lines carry MACs, not checked");
    const wrong = await scifi(["audit", "verify", tape], {
      SCIFI_AUDIT_KEY: "another-key-another-key-another",
    });
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).toContain(":1: MAC does not match");
    const bad = await scifi(["audit", "verify", tape], { SCIFI_AUDIT_KEY: "short" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("an audit key needs at least 16");
  });
});
