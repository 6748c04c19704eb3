// Attacks on `scifi export` that broke a promise and are fixed (an attacker session on issue 29,
// written from docs/export.md and the issue before reading runner/export/; fixes in docs/export.md:
// the normalised hidden search before the rewriting, the tape's and a trial's runId, the tape's
// run_end record, the engines' storage paths). Two real Docker runs of sumfix-hidden
// with scripted attacker agents (labelled scripted; test/fixtures/adversarial/agents/ax-export-*.yaml),
// keyed with a site audit key; each probe exports the run or a copy of its folder changed in one
// thing (test/export/attack-run.ts). Each test asserts the secure behaviour (each failed before its fix).
//
// AX29-1 hidden content without its final newline. Promise (docs/export.md 4, issue 29 point 4):
//   the content of a hidden asset is in no exported byte; searched for "byte for byte".
//   Attack: the agent prints the reference it inferred with printf (no final newline) and more text
//   after it. Happened: the guard searches for the whole file, final newline included, so the whole
//   reference less its last byte is exported (ATIF and SFT) without a word.
// AX29-2 hidden content as Python's json.dumps writes it. Promise: "JSON-escaped" forms are found.
//   Attack: a reference with non-ASCII characters (µ, Å) printed by json.dumps (ensure_ascii:
//   \u00b5). Happened: only JSON.stringify's escapes are searched; exported.
// AX29-3 a keyed tape cut at a call boundary, heads moved. Promise (docs/export.md 1, anchor.ts: a
//   rewrite of state.json and the history "a site audit key then catches"; issue: "a tampered tape
//   is refused"). Attack: drop the review and final-review calls, keep every other line as written
//   (their MACs stay genuine), set state.json auditHead and the history's heads to the new last line.
//   Happened: exported with --key as a genuine passed run, no review in it: nothing the key seals
//   says where a finished run's tape ends.
// AX29-4 host paths from the sandbox's mount table. Promise (issue 29 point 4): host paths outside
//   the task folder are never exported (docs/export.md narrows this: "a mount's host source named in
//   a tool result is not rewritten"). Attack: `cat /proc/self/mountinfo` in the work sandbox.
//   Happened: /var/lib/docker/overlay2/... and /var/lib/docker/containers/<id>/... are exported.
// AX29-5 an eval trial whose result.json names another run. Not a documented promise; the issue's
//   "refuse what it cannot vouch for". Attack: trials/t1/result.json says runId other-run, status
//   fail, runDir a passed run outside the scifi home. Happened: exported as trial t1, verdict passed.
// AX29-6 a hidden reference holding a host path or a key shape (the guard, ExportGuard, directly).
//   Promise: the content of a hidden asset is in no exported byte. Attack: a reference listing
//   `/root/data/x.csv 42.0` (the runner's home is /root) or holding a token of a known shape.
//   Happened: paths are rewritten and keys redacted BEFORE the hidden search, so the reference
//   leaves with one piece replaced (`<home>/data/x.csv 42.0`, `expected: [REDACTED] -> 7.5`).
// AX29-8 another run's tape in a run folder. Promise (issue 29: "refuse what it cannot vouch for";
//   docs/export.md 1: the heads recorded outside the tape). Attack: run B's genuine keyed tape and
//   history copied into run A's folder, state.json's auditHead set to B's. Happened: exported with
//   --key as run A (session_id A, A's verdict) holding B's conversation; the tape's own runId (on
//   every record) is not compared with the run's, so a failed run's calls can be labelled passed.
// AX29-7 a hidden reference with a byte-order mark or CRLF line ends, printed without them (the
//   guard directly). Happened: the whole-file search misses it; exported (the class of AX29-1).
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Redactor } from "../../runner/audit/redact.ts";
import { ExportGuard } from "../../runner/export/guard.ts";
import { hasEngine } from "../helpers/engines.ts";
import {
  type AttackRun,
  attackRun,
  copyRun,
  exportIn,
  removeRun,
  tapeLines,
  truncateWithHeads,
  withHidden,
} from "./attack-run.ts";

let leak: AttackRun;
let paths: AttackRun;

describe.skipIf(!hasEngine("docker"))(
  "scifi export: open attacks (docker, scripted attackers)",
  { timeout: 300_000 },
  () => {
    beforeAll(async () => {
      leak = await attackRun("ax-export-leak.yaml");
      paths = await attackRun("ax-export-paths.yaml");
    }, 300_000);
    afterAll(() => {
      removeRun(leak);
      removeRun(paths);
    });

    it("AX29-1: a hidden reference printed without its final newline is refused", async () => {
      const content = "ref-one 1.25\nref-one 2.50\n";
      expect(readFileSync(join(leak.dir, "audit.jsonl"), "utf8")).toContain(
        "ref-one 1.25\\nref-one 2.50 <- values",
      );
      const dir = withHidden(leak, "notrail", content);
      for (const format of ["atif", "sft"] as const) {
        const r = await exportIn(leak, dir, format);
        expect(r.text, format).not.toContain("ref-one 1.25\\nref-one 2.50");
        expect(r.refused.join("\n"), format).toMatch(/hidden check asset checks\/ref\.txt/);
      }
    });

    it("AX29-2: a hidden reference in Python's json.dumps form (\\u00b5) is refused", async () => {
      const dir = withHidden(leak, "ascii", "µ-ref-two 3.75 Å stop");
      for (const format of ["atif", "sft"] as const) {
        const r = await exportIn(leak, dir, format);
        expect(r.text, format).not.toContain("u00b5-ref-two 3.75");
        expect(r.refused.join("\n"), format).toMatch(/hidden check asset checks\/ref\.txt/);
      }
    });

    it("AX29-3: a keyed tape cut at a call boundary, with its heads moved, is refused", async () => {
      const dir = copyRun(leak, "cut");
      truncateWithHeads(dir, tapeLines(leak.dir).slice(0, -2));
      const r = await exportIn(leak, dir, "atif");
      expect(r.text).toBe("");
      expect(r.refused).toHaveLength(1);
      expect(r.refused[0]).toMatch(/no run_end record/);
      // Said plainly with --allow-unfinished (older tapes): the cut tape exports, its calls genuine.
      const allowed = await exportIn(leak, dir, "atif", { allowUnfinished: true });
      expect(allowed.refused).toEqual([]);
    });

    it("AX29-4: no host path of the sandbox's mounts is exported", async () => {
      const r = await exportIn(paths, paths.dir, "atif");
      expect(r.refused).toEqual([]);
      expect(readFileSync(join(paths.dir, "audit.jsonl"), "utf8")).toContain("/var/lib/docker/");
      expect(r.text).not.toContain("/var/lib/docker/");
    });

    it("AX29-8: another run's genuine tape and history in a run folder are refused", async () => {
      const [a, b] = [leak, paths];
      const dir = copyRun(a, "swap");
      for (const file of ["audit.jsonl", "history.jsonl"]) copyFileSync(join(b.dir, file), join(dir, file));
      const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
      state.auditHead = JSON.parse(readFileSync(join(b.dir, "state.json"), "utf8")).auditHead;
      writeFileSync(join(dir, "state.json"), JSON.stringify(state));
      const r = await exportIn(a, dir, "atif");
      expect(r.text).not.toContain("links are never followed on the host"); // B's tool results
      expect(r.refused).toHaveLength(1);
    });

    it("AX29-5: an eval trial whose result names another run is refused", async () => {
      const trial = join(leak.home, "evals", "e9", "trials", "t1");
      mkdirSync(trial, { recursive: true });
      const outside = copyRun(leak, "elsewhere");
      writeFileSync(
        join(trial, "result.json"),
        JSON.stringify({
          version: 1,
          evalId: "e9",
          trialId: "t1",
          task: "adversarial-sumfix-hidden",
          variant: "default",
          model: "scripted",
          scripted: true,
          repeat: 1,
          status: "fail",
          verdict: "FAILED",
          exitCode: 3,
          cause: "the work agent reported a blocker",
          iterations: 1,
          wallMs: 1,
          tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
          cacheReadShare: 0,
          usd: 0,
          toolCalls: 1,
          toolRejections: 0,
          approvalsWaited: 0,
          runId: "other-run",
          runDir: outside,
          startedAt: "2026-12-02T00:00:00.000Z",
          endedAt: "2026-12-02T00:01:00.000Z",
        }),
      );
      const r = await exportIn(leak, "e9", "atif");
      expect(r.text).toBe("");
      expect(r.refused.join("\n")).toMatch(/other-run/);
    });
  },
);

describe("scifi export's guard: hidden references changed on their way out", () => {
  const refuses = (guard: ExportGuard, printed: string) =>
    expect(() => guard.json(JSON.stringify({ content: printed }), "test")).toThrow(/checks\/ref\.txt/);

  it("AX29-6: a reference holding a host path the export rewrites is still refused", () => {
    const ref = "/root/data/x.csv 42.0\n";
    refuses(
      new ExportGuard({
        paths: [{ from: "/root", to: "<home>" }],
        hidden: [{ rel: "checks/ref.txt", content: ref }],
      }),
      ref,
    );
  });

  it("AX29-6: a reference holding a key shape the export redacts is still refused", () => {
    const ref = "expected: ghp_abcdefghijklmnopqrstuvwxyz0123456789 -> 7.5\n";
    refuses(
      new ExportGuard({ redactor: new Redactor(), hidden: [{ rel: "checks/ref.txt", content: ref }] }),
      ref,
    );
  });

  it("AX29-7: a reference with a byte-order mark, printed without it, is refused", () => {
    const guard = new ExportGuard({
      hidden: [{ rel: "checks/ref.txt", content: "\uFEFFref-bom 1.0 2.0\n" }],
    });
    refuses(guard, "ref-bom 1.0 2.0\n");
  });

  it("AX29-7: a reference with CRLF line ends, printed with LF, is refused", () => {
    const guard = new ExportGuard({
      hidden: [{ rel: "checks/ref.txt", content: "ref-crlf 1.0\r\nref-crlf 2.0\r\n" }],
    });
    refuses(guard, "ref-crlf 1.0\nref-crlf 2.0\n");
  });
});
