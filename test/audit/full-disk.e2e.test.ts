// A full disk: every record writer (audit tape, history, memory files, atomic JSON files) either
// writes a whole record or leaves the file as it was, with a RecordWriteFailed naming the file and
// the space it needs. First each writer on a small real tmpfs, then the real CLI: a scripted reply too
// big for a 2 MiB tmpfs scifi home fills the disk in the middle of the tape write; the run ends
// failed naming the tape, every record verifies, and after a remount to 64 MiB `--resume` passes.
import { execFile, execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { RecordWriteFailed, writeJsonAtomic } from "../../runner/atomic-write.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { verifyTape } from "../../runner/audit/verify.ts";
import { appendEntry, parseEntries } from "../../runner/memory/entries.ts";
import { HistoryTape, readHistory } from "../../runner/memory/history.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, fixture, lines, REPO, workspace } from "../run/harness.ts";

const exec = promisify(execFile);
const isRoot = process.getuid?.() === 0;
const KiB = 1024;
const KEY = "full-disk-test-audit-key-0123456789";

function mountTmpfs(dir: string, size: string): void {
  mkdirSync(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir]);
}

function resize(dir: string, size: string): void {
  execFileSync("mount", ["-o", `remount,size=${size}`, dir]);
}

function unmount(dir: string): void {
  try {
    execFileSync("umount", [dir]);
  } catch {
    execFileSync("umount", ["-l", dir]);
  }
}

/** Leaves about `left` bytes free on the tmpfs at `dir` (a filler file takes the rest). */
function fillUpTo(dir: string, left: number): void {
  const fs = execFileSync("df", ["-B1", "--output=avail", dir], { encoding: "utf8" });
  const avail = Number(fs.trim().split("\n").at(-1));
  writeFileSync(join(dir, "filler"), Buffer.alloc(Math.max(0, avail - left)));
}

describe.skipIf(!isRoot)("record writers on a full tmpfs", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "scifi-full-"));
    mountTmpfs(dir, "1m");
  });
  afterEach(() => rmSync(join(dir, "filler"), { force: true }));
  afterAll(() => unmount(dir));

  it("the audit tape: a record that does not fit is rolled back whole, and the tape goes on once there is space", () => {
    const path = join(dir, "audit.jsonl");
    const tape = new AuditTape(path, { runId: "r1", key: null });
    tape.append({ kind: "event", event: "start" });
    const head = tape.head();
    fillUpTo(dir, 16 * KiB);
    const size = statSync(path).size;
    let error: unknown;
    try {
      tape.append({ kind: "event", event: "big", data: { text: "x".repeat(200 * KiB) } });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RecordWriteFailed);
    const failed = error as RecordWriteFailed;
    expect(failed.file).toBe(path);
    expect(failed.code).toBe("ENOSPC");
    expect(failed.rolledBack).toBe(true);
    expect(failed.bytes).toBeGreaterThan(200 * KiB);
    expect(failed.message).toMatch(
      new RegExp(
        `^cannot write ${path}: no space left on device; the record needs 200\\.\\d KiB, \\d+\\.\\d KiB free`,
      ),
    );
    // Nothing of the record is on the tape, and the tape's own state did not move either.
    expect(statSync(path).size).toBe(size);
    expect(tape.head()).toEqual(head);
    expect(verifyTape(path)).toEqual({ ok: true, records: 1 });
    rmSync(join(dir, "filler"));
    expect(tape.append({ kind: "event", event: "after" })).toBe(1);
    tape.close();
    expect(verifyTape(path)).toEqual({ ok: true, records: 2 });
    // A new writer (a resumed run) continues the same chain.
    const again = new AuditTape(path, { runId: "r1", key: null });
    again.append({ kind: "event", event: "resumed" });
    again.close();
    expect(verifyTape(path)).toEqual({ ok: true, records: 3 });
  });

  it("the history: a failed event leaves the last complete line, and the count does not move", () => {
    const file = join(dir, "history.jsonl");
    const history = new HistoryTape(file);
    history.append({ type: "iteration_start", iteration: 1 });
    fillUpTo(dir, 8 * KiB);
    expect(() =>
      history.append({ type: "limit", iteration: 1, limit: "x", detail: "y".repeat(100 * KiB) }),
    ).toThrow(RecordWriteFailed);
    expect(history.length).toBe(1);
    expect(readFileSync(file, "utf8").endsWith("\n")).toBe(true);
    expect(readHistory(file).map((e) => e.type)).toEqual(["iteration_start"]);
    rmSync(join(dir, "filler"));
    expect(history.append({ type: "iteration_end", iteration: 1, passed: true }).seq).toBe(2);
  });

  it("a memory file: an entry that does not fit leaves the file as it was, and its lock is released", async () => {
    const file = join(dir, "memory.md");
    const entry = { time: "t", runId: "r1", role: "review", title: "T" };
    await appendEntry(file, { ...entry, id: "r1/a", body: "first" });
    const before = readFileSync(file, "utf8");
    fillUpTo(dir, 8 * KiB);
    await expect(appendEntry(file, { ...entry, id: "r1/b", body: "z".repeat(100 * KiB) })).rejects.toThrow(
      RecordWriteFailed,
    );
    expect(readFileSync(file, "utf8")).toBe(before);
    rmSync(join(dir, "filler"));
    expect(await appendEntry(file, { ...entry, id: "r1/c", body: "after" })).toBe(true);
    expect(parseEntries(readFileSync(file, "utf8")).map((e) => e.id)).toEqual(["r1/a", "r1/c"]);
  });

  it("an atomic JSON file: the target keeps its old content and no temp file is left", () => {
    const file = join(dir, "state.json");
    writeJsonAtomic(file, { phase: "prescan" });
    fillUpTo(dir, 8 * KiB);
    expect(() => writeJsonAtomic(file, { phase: "work", big: "w".repeat(100 * KiB) })).toThrow(
      RecordWriteFailed,
    );
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ phase: "prescan" });
    expect(readdirSync(dir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });
});

describe.skipIf(!isRoot || !hasEngine("docker"))("scifi run on a full disk", () => {
  const mounts: string[] = [];
  beforeAll(() => ensureImage(), 1_800_000);
  afterAll(() => {
    for (const dir of mounts) unmount(dir);
  });

  it("ends failed naming the tape, leaves every record whole, and resumes once there is space", async () => {
    const ws = workspace("verilator-counter-debug");
    mountTmpfs(ws.home, "2m");
    mounts.push(ws.home);
    // The first work reply carries 3 MiB of text: its tape record cannot fit in a 2 MiB home.
    const script = join(ws.root, "full-disk-1.yaml");
    writeFileSync(
      script,
      [
        "prescan:",
        '  - json: { node: root, rank: 2, skills: [], context: "", plan: "fix LAST", direction: "fix the terminal count" }',
        "work:",
        `  - text: "${"long thoughts ".repeat((3 * 1024 * KiB) / 14)}"`,
        '    tool_calls: [{ name: bash, input: { command: "head -3 rtl/counter.v" } }]',
        "",
      ].join("\n"),
    );
    const env = { ...process.env, SCIFI_HOME: ws.home, SCIFI_AUDIT_KEY: KEY, SCIFI_AUDIT_KEY_FILE: "" };
    const scifi = join(REPO, "bin/scifi.js");
    const cli = (args: string[]) =>
      exec(process.execPath, [scifi, ...args], { env, timeout: 300_000, maxBuffer: 16 * 1024 * KiB }).then(
        (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({
          code: e.code,
          stdout: e.stdout,
          stderr: e.stderr,
        }),
      );

    const first = await cli(["run", ws.sam, "--model", `scripted:${script}`]);
    const runId = readdirSync(join(ws.home, "runs"))[0] ?? "";
    const runDir = join(ws.home, "runs", runId);
    const tape = join(runDir, "audit.jsonl");
    expect(first.code, first.stderr).toBe(1);
    expect(first.stderr).toContain(
      `scifi run: cannot write ${tape}: no space left on device; the record needs 3.`,
    );
    expect(first.stderr).toContain("nothing was half-written");
    expect(first.stderr).toMatch(
      new RegExp(
        `free space on the disk holding ${tape} \\(at least [\\d.]+ [KM]iB more; .*\\), then continue with: scifi run --resume ${runId}\\n`,
      ),
    );

    // Every record is whole: the tape verifies (chain, MACs), the history parses, the state is the
    // last checkpoint, and no temp file is left behind.
    const verify = await cli(["audit", "verify", runId]);
    expect(verify.code, verify.stdout).toBe(0);
    expect(verify.stdout).toContain("MACs verified with the audit key");
    for (const file of ["audit.jsonl", "history.jsonl"])
      expect(readFileSync(join(runDir, file), "utf8").endsWith("\n")).toBe(true);
    expect(readHistory(join(runDir, "history.jsonl")).length).toBeGreaterThan(0);
    const state = JSON.parse(readFileSync(join(runDir, "state.json"), "utf8")) as { phase: string };
    expect(state.phase).toBe("prescan");
    expect(readdirSync(runDir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
    const tapeBefore = lines(tape);
    expect(tapeBefore.some((l) => l.includes("long thoughts"))).toBe(false);

    // Space is back: the run resumes from its checkpoint and passes, on the same chain.
    resize(ws.home, "64m");
    const resumed = await cli([
      "run",
      "--resume",
      runId,
      "--model",
      `scripted:${fixture("verilator-resume-2.yaml")}`,
    ]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/^PASSED/);
    const after = await cli(["audit", "verify", runId]);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).toMatch(
      /head anchored \(seq \d+ recorded in state\.json, history\.jsonl; \d+ head\(s\) checked\); MACs verified/,
    );
    expect(lines(tape).slice(0, tapeBefore.length)).toEqual(tapeBefore);
    expect(existsSync(join(runDir, "run.lock"))).toBe(false);
  }, 900_000);
});
