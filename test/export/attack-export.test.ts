// Attacks on `scifi export` that HELD (an attacker session, issue 29; written from docs/export.md
// before reading runner/export/). One real Docker run of sumfix-hidden with the scripted attacker
// agent ax-export-leak.yaml (labelled scripted), keyed with a site audit key; each probe exports
// that run or a copy of its folder changed in one thing (attack-run.ts). Those that broke are in
// test/open/ax-export.pending.ts.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TrialResult } from "../../runner/eval/trial-result.ts";
import { ExportFailed, runExport } from "../../runner/export/export.ts";
import { hasEngine } from "../helpers/engines.ts";
import {
  type AttackRun,
  AUDIT_KEY,
  attackRun,
  copyRun,
  exportIn,
  exportRun,
  LATE_SECRET,
  rechain,
  removeRun,
  tapeLines,
  withHidden,
  writeTape,
} from "./attack-run.ts";

let run: AttackRun;

/** A trial result (runner/eval/trial-result.ts) naming `dir` as its run. */
function trialResult(id: string, status: "pass" | "fail", dir: string): TrialResult {
  return {
    version: 1,
    evalId: "p1",
    trialId: id,
    task: "adversarial-sumfix-hidden",
    variant: "default",
    model: "scripted",
    scripted: true,
    repeat: 1,
    status,
    verdict: status === "pass" ? "PASSED" : "FAILED",
    exitCode: status === "pass" ? 0 : 3,
    cause: status === "pass" ? "every check and review item passed" : "a check failed",
    iterations: 1,
    wallMs: 1000,
    tokens: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    cacheReadShare: 0,
    usd: 0,
    toolCalls: 1,
    toolRejections: 0,
    approvalsWaited: 0,
    runId: JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).runId, // the run's own id
    runDir: dir,
    startedAt: "2026-12-02T00:00:00.000Z",
    endedAt: "2026-12-02T00:01:00.000Z",
  };
}

describe.skipIf(!hasEngine("docker"))(
  "scifi export under attack (docker, scripted attacker)",
  { timeout: 300_000 },
  () => {
    beforeAll(async () => {
      run = await attackRun();
      expect(JSON.parse(readFileSync(join(run.dir, "state.json"), "utf8")).outcome.status).toBe("passed");
    }, 300_000);
    afterAll(() => {
      removeRun(run);
    });

    // docs/export.md 4: each hidden asset's whole content is searched for in every exported text.
    // The agent "inferred" a reference and put it where a model's output goes: a tool call's
    // arguments, a file name in a tool result, its thinking, the claim the review reads, an object key.
    it.each([
      ["tool-call arguments", "ref-four-args 0xDEADBEEF 42", ["atif", "sft"]],
      ["a file name in a tool result", "ref-six-filename-77.5", ["atif", "sft"]],
      ["thinking (ATIF reasoning_content)", "ref-five-thinking 8.125 kg", ["atif"]],
      ["the done claim (work call, review prompt)", "ref-seven-claim 99.01", ["atif", "sft"]],
      ["a key of the tool input object", "ref-fifteen-key 3.3", ["atif", "sft"]],
      // Text the runner itself puts in front of a model: a run stage's output, the SAM, the history.
      ["a run stage's output (ATIF check step, review prompt)", "result.txt: ok\n", ["atif", "sft"]],
      ["the SAM's text (node step, pre-scan prompt)", "Fix the bug in `src/sum.c`.", ["atif", "sft"]],
      ["history JSON quoted in a prompt", '"type":"iteration_start"', ["atif", "sft"]],
    ] as const)(
      "hidden content in %s: refused naming the asset, nothing written",
      async (_where, content, formats) => {
        const dir = withHidden(run, "hidden", content);
        for (const format of formats) {
          const r = await exportIn(run, dir, format);
          expect(r.refused.join("\n"), format).toMatch(
            /holds the content of the hidden check asset checks\/ref\.txt/,
          );
          expect(r.refused.join("\n")).not.toContain(content);
          expect(existsSync(r.out), format).toBe(false);
        }
      },
    );

    it("thinking is not in SFT rows: the run exports and the hidden thinking text is not in them", async () => {
      const r = await exportIn(run, withHidden(run, "think", "ref-five-thinking 8.125 kg"), "sft");
      expect(r.refused).toEqual([]);
      expect(r.text.length).toBeGreaterThan(1000);
      expect(r.text).not.toContain("ref-five-thinking");
    });

    it("a value secret only at export time is redacted in tool results, thinking and object keys", async () => {
      expect(readFileSync(join(run.dir, "audit.jsonl"), "utf8")).toContain(LATE_SECRET);
      for (const format of ["atif", "sft"] as const) {
        const r = await exportIn(run, run.dir, format);
        expect(r.refused).toEqual([]);
        expect(r.text).not.toContain(LATE_SECRET);
        expect(r.text).toContain("[REDACTED]");
      }
    });

    it("--skip-refused: the run holding hidden content is named and left out, the other exported alone", async () => {
      const leak = withHidden(run, "skip", "ref-four-args 0xDEADBEEF 42");
      const clean = copyRun(run, "skip-clean");
      const out = join(run.scratch, "skip.jsonl");
      const summary = await runExport({
        inputs: [leak, clean],
        format: "atif",
        home: run.home,
        out,
        key: Buffer.from(AUDIT_KEY),
        skipRefused: true,
      });
      expect(summary.refused.map((r) => r.dir)).toEqual([leak]);
      expect(summary.refused[0]?.reason).toMatch(/hidden check asset checks\/ref\.txt/);
      expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(1);
    });

    it("preference pairs: a trial's run holding hidden content refuses the pair", async () => {
      const leak = withHidden(run, "pref", "ref-four-args 0xDEADBEEF 42");
      const failing = copyRun(run, "pref-fail");
      const state = JSON.parse(readFileSync(join(failing, "state.json"), "utf8"));
      state.outcome = { status: "failed", reason: "a check failed" };
      writeFileSync(join(failing, "state.json"), JSON.stringify(state));
      for (const [id, status, dir] of [
        ["a", "pass", leak],
        ["b", "fail", failing],
      ] as const) {
        mkdirSync(join(run.home, "evals", "p1", "trials", id), { recursive: true });
        writeFileSync(
          join(run.home, "evals", "p1", "trials", id, "result.json"),
          JSON.stringify(trialResult(id, status, dir)),
        );
      }
      const out = join(run.scratch, "pairs.jsonl");
      const failed = await runExport({
        inputs: ["p1"],
        format: "preference",
        home: run.home,
        out,
        key: Buffer.from(AUDIT_KEY),
      }).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(ExportFailed);
      expect((failed as ExportFailed).summary.refused[0]?.reason).toMatch(
        /hidden check asset checks\/ref\.txt/,
      );
      expect(existsSync(out)).toBe(false);
    });

    it("the compare stage's output is not exported", async () => {
      const output = readFileSync(join(run.dir, "check-output", "it1-root_check-2.txt"), "utf8");
      expect(output).toContain("got.txt: ok");
      expect((await exportIn(run, run.dir, "atif")).text).not.toContain("got.txt: ok");
    });

    it("a run folder linked into runs/ exports without naming the folder it points to", async () => {
      const real = copyRun(run, "linked");
      symlinkSync(real, join(run.home, "runs", "linked-run"));
      const r = await exportIn(run, "linked-run", "atif");
      expect(r.refused).toEqual([]);
      expect(r.text).not.toContain(run.scratch);
    });

    // docs/export.md 1: the chain, the heads outside it and, with a key, every line's MAC.
    const edit = (lines: string[]) => lines.map((l) => l.replace("ref-one 1.25", "ref-0ne 1.25"));
    it.each([
      [
        "a line edited",
        (d: string, l: string[]) => writeTape(d, edit(l)),
        /audit\.jsonl:2: hash does not match/,
      ],
      [
        "lines dropped at the end",
        (d: string, l: string[]) => writeTape(d, l.slice(0, -2)),
        /at least 2 record\(s\) at the end were dropped/,
      ],
      [
        "a second tape appended",
        (d: string, l: string[]) => writeTape(d, [...l, ...l]),
        // Whatever the tape's length: the first line of the second copy starts again at seq 0.
        /audit\.jsonl:\d+: seq 0 where \d+ was expected: lines were reordered or duplicated/,
      ],
      [
        "an edit re-chained with both heads moved, MACs dropped",
        (d: string, l: string[]) => rechain(d, edit(l)),
        /audit\.jsonl:1: no MAC/,
      ],
      [
        "an edit re-chained with both heads moved, MACs of another key",
        (d: string, l: string[]) => rechain(d, edit(l), Buffer.from(`not-${AUDIT_KEY}`)),
        /audit\.jsonl:1: MAC does not match/,
      ],
    ] as const)("a tampered tape is refused with the reason: %s", async (_what, tamper, reason) => {
      const dir = copyRun(run, "tamper");
      tamper(dir, tapeLines(run.dir));
      const r = await exportIn(run, dir, "atif");
      expect(r.refused.join("\n")).toMatch(reason);
      expect(existsSync(r.out)).toBe(false);
    });

    it("the CLI: a tampered line carrying terminal escapes is refused (exit 1) without them on stderr", async () => {
      const dir = copyRun(run, "escapes");
      writeTape(
        dir,
        tapeLines(run.dir).map((l) =>
          l.replace("ref-one 1.25", "\\u001b]0;pwned\\u0007\\u001b[2Jref-one 1.25"),
        ),
      );
      const r = await exportRun(run, dir, "atif");
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/hash does not match the content/);
      expect([...r.stderr].filter((c) => c !== "\n" && (c < " " || c === "\u007f"))).toEqual([]);
      expect(r.stderr).not.toContain("pwned");
      expect(r.text).toBe("");
    });
  },
);

// docs/export.md 3: host paths. The attacker's tools fail on links out of the task folder, a FIFO
// and `..` paths (ax-export-paths.yaml): the runner's errors and the export name no host folder.
describe.skipIf(!hasEngine("docker"))(
  "scifi export: host paths in tool errors (docker, scripted attacker)",
  { timeout: 300_000 },
  () => {
    let paths: AttackRun | undefined;
    beforeAll(async () => {
      paths = await attackRun("ax-export-paths.yaml");
    }, 300_000);
    afterAll(() => removeRun(paths));

    it("the errors of links, a FIFO and .. paths are exported without a host path", async () => {
      const p = paths as AttackRun;
      for (const format of ["atif", "sft"] as const) {
        const r = await exportIn(p, p.dir, format);
        expect(r.refused).toEqual([]);
        expect(r.text).toContain("links are never followed on the host");
        expect(r.text).toContain("not a regular file");
        for (const host of [p.root, p.home, p.dir, process.cwd()]) expect(r.text, format).not.toContain(host);
      }
    });
  },
);
