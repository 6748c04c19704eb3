// .ci/run's timing: the step bookkeeping of .ci/steps.sh (foreground and parallel steps, a failure,
// a stop with a step still running), the per-file reporter scripts/ci-file-times.ts in a real vitest
// run, and the table scripts/ci-table.ts prints from both.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { appendInner } from "../../scripts/ci-file-times.ts";
import { clock, parseSteps, parseTimes, report, slowestTable, stepsTable } from "../../scripts/ci-table.ts";

const REPO = join(import.meta.dirname, "..", "..");
const dirs: string[] = [];
function tmp(): string {
  const dir = mkdtempSync(join(tmpdir(), "scifi-ci-timing-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

// The table is printed with `node` from PATH, as in CI after the Node 24 step.
const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` };

/** True while process `pid` runs (a zombie has ended). */
function alive(pid: string): boolean {
  if (!existsSync(`/proc/${pid}/stat`)) return false;
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Runs a bash script that sources .ci/steps.sh; returns its exit code, output and CI_OUT. */
function ciScript(body: string): { code: number | null; out: string; dir: string } {
  const dir = tmp();
  const script = join(dir, "run.sh");
  writeFileSync(script, `set -euo pipefail\nsource ${join(REPO, ".ci", "steps.sh")}\n${body}\n`);
  const r = spawnSync("bash", [script], {
    env: { ...env, SCIFI_CI_OUT: join(dir, "out") },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}`, dir: join(dir, "out") };
}

describe("ci-table", () => {
  it("formats clocks", () => {
    expect(clock(0)).toBe("0:00");
    expect(clock(59.6)).toBe("1:00");
    expect(clock(754)).toBe("12:34");
    expect(clock(3 * 3600 + 62)).toBe("3:01:02");
  });

  it("reads steps and times, skipping torn lines", () => {
    const steps = parseSteps("a\t100\t160\tok\tfg\nb\t100\t0\tstopped\tbg\nbroken\t1\n");
    expect(steps).toEqual([
      { name: "a", start: 100, end: 160, status: "ok", mode: "fg" },
      { name: "b", start: 100, end: 0, status: "stopped", mode: "bg" },
    ]);
    const times = parseTimes('{"file":"x.test.ts","ms":5,"state":"passed"}\n{"file":"y.te');
    expect(times).toEqual([{ file: "x.test.ts", ms: 5, state: "passed" }]);
  });

  it("lists steps by start, counts one still running up to the end, totals from the first start", () => {
    const lines = stepsTable(parseSteps("b\t1030\t0\tstopped\tbg\na\t1000\t1060\tok\tfg\n"), 1300);
    expect(lines[0]).toMatch(/^step\s+start\s+wall\s+status$/);
    expect(lines[1]).toMatch(/^a\s+00:16:40\s+1:00\s+ok$/);
    expect(lines[2]).toMatch(/^b\s+00:17:10\s+4:30\s+parallel\s+stopped$/);
    expect(lines[3]).toMatch(/^total \(first start to end\)\s+00:16:40\s+5:00$/);
  });

  it("lists the 15 slowest files, slowest first", () => {
    const times = Array.from({ length: 20 }, (_, i) => ({
      file: `f${i}.test.ts`,
      ms: i * 1000,
      state: "passed",
    }));
    const lines = slowestTable(times);
    expect(lines[0]).toContain("15 slowest of 20 test files (summed 3:10");
    const files = lines.slice(2).map((l) => l.split(/\s+/)[2]);
    expect(files).toEqual(Array.from({ length: 15 }, (_, i) => `f${19 - i}.test.ts`));
    expect(slowestTable([])).toEqual(["(no test file finished: no per-file times)"]);
  });

  it("shows files run inside another file apart, and keeps them out of the main list", () => {
    const dir = tmp();
    const inner = join(dir, "inner.jsonl");
    const all = join(dir, "all.jsonl");
    writeFileSync(all, '{"file":"test/sandbox/apptainer.test.ts","ms":300000,"state":"passed"}\n');
    appendInner(join(dir, "missing.jsonl"), all, "test/sandbox/apptainer.test.ts");
    writeFileSync(
      inner,
      '{"file":"test/sandbox/apptainer/a.inner.ts","ms":60000,"state":"passed"}\n{"file":"test/sandbox/apptainer/b.inner.ts","ms":120000,"state":"failed"}\n{"fi',
    );
    appendInner(inner, all, "test/sandbox/apptainer.test.ts");
    const times = parseTimes(readFileSync(all, "utf8"));
    expect(times.map((t) => t.inside)).toEqual([
      undefined,
      "test/sandbox/apptainer.test.ts",
      "test/sandbox/apptainer.test.ts",
    ]);
    const text = report("", readFileSync(all, "utf8"), 0);
    expect(text).toContain("1 slowest of 1 test files");
    expect(text).toMatch(
      /2 slowest of 2 test files inside test\/sandbox\/apptainer\.test\.ts \(one at a time; part of its time\)\nwall\s+state\s+file\n2:00\s+failed\s+test\/sandbox\/apptainer\/b\.inner\.ts\n1:00\s+passed\s+test\/sandbox\/apptainer\/a\.inner\.ts$/,
    );
  });

  it("says when nothing was recorded", () => {
    expect(report("", "", 0)).toBe(
      "==> CI timing\n(no step started)\n\n(no test file finished: no per-file times)",
    );
  });
});

describe(".ci/steps.sh", () => {
  it("times foreground and parallel steps and prints the table when all pass", () => {
    const r = ciScript(
      [
        'ci_step "one"',
        "echo from-one",
        'ci_spawn "side" bash -c "sleep 1; echo from-side"',
        'ci_step "two"',
        'ci_wait "side"',
        "ci_step_end",
      ].join("\n"),
    );
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain("[side] from-side");
    expect(readFileSync(join(r.dir, "logs", "side.log"), "utf8")).toBe("from-side\n");
    const steps = parseSteps(readFileSync(join(r.dir, "steps.tsv"), "utf8"));
    expect(steps.map((s) => [s.name, s.status, s.mode])).toEqual([
      ["one", "ok", "fg"],
      ["side", "ok", "bg"],
      ["two", "ok", "fg"],
    ]);
    expect(steps[1] && steps[1].end - steps[1].start).toBeGreaterThanOrEqual(1);
    expect(r.out).toMatch(/==> CI timing\nstep\s+start\s+wall\s+status\none\s/);
    expect(r.out).toMatch(/side\s+\d\d:\d\d:\d\d\s+0:0[1-9]\s+parallel\s+ok/);
    expect(r.out).toContain("CI passed after");
  });

  it("stops on a failed parallel step, shows its log's tail, and prints the table", () => {
    const r = ciScript(
      [
        'ci_spawn "bad" bash -c "echo boom-line; exit 3"',
        'ci_spawn "good" true',
        'ci_wait "good" "bad"',
        'ci_step "never"',
      ].join("\n"),
    );
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain("[bad] boom-line");
    expect(r.out).toMatch(/==> bad FAILED; the last 40 lines of \S+bad\.log:\nboom-line\n/);
    expect(r.out).toMatch(/bad\s+\d\d:\d\d:\d\d\s+0:\d\d\s+parallel\s+failed \(exit 3\)/);
    expect(r.out).not.toContain("never");
    expect(r.out).toContain("CI FAILED (exit 1)");
  });

  it("on a failed foreground step, records it and ends a parallel step still running, with its children", async () => {
    const r = ciScript(
      [
        `ci_spawn "slow" bash -c "sleep 60 & echo \\$! > $CI_OUT/child; wait"`,
        'while [ ! -s "$CI_OUT/child" ]; do sleep 0.1; done',
        'ci_step "breaks"',
        "exit 7",
      ].join("\n"),
    );
    expect(r.code, r.out).toBe(7);
    expect(r.out).toMatch(/breaks\s+\d\d:\d\d:\d\d\s+0:\d\d\s+failed \(exit 7\)/);
    expect(r.out).toMatch(/slow\s+\d\d:\d\d:\d\d\s+0:\d\d\s+parallel\s+stopped \(CI ended first\)/);
    const child = readFileSync(join(r.dir, "child"), "utf8").trim();
    // SIGTERM lands a moment later: poll until the sleep is gone (or a zombie awaiting its reaper).
    await vi.waitFor(() => expect(alive(child), `sleep ${child} outlived CI`).toBe(false), {
      timeout: 5_000,
    });
  });
});

describe("ci-file-times reporter", () => {
  it("writes each finished file's whole time, a slow beforeAll included, also for a failing file", () => {
    const root = tmp();
    writeFileSync(
      join(root, "slow.test.js"),
      'beforeAll(() => new Promise((r) => setTimeout(r, 1500)));\nit("a", () => expect(1).toBe(1));\n',
    );
    writeFileSync(join(root, "fails.test.js"), 'it("b", () => expect(1).toBe(2));\n');
    const out = join(root, "times.jsonl");
    const vitest = join(REPO, "node_modules", "vitest", "vitest.mjs");
    const reporter = join(REPO, "scripts", "ci-file-times.ts");
    const args = [vitest, "run", "--root", root, "--globals", "--reporter=default", `--reporter=${reporter}`];
    const r = spawnSync(process.execPath, args, { env: { ...env, SCIFI_CI_TIMES: out }, encoding: "utf8" });
    expect(r.status, r.stdout + r.stderr).toBe(1);
    const times = parseTimes(readFileSync(out, "utf8"));
    const byFile = new Map(times.map((t) => [t.file, t]));
    expect(byFile.get("slow.test.js")?.state).toBe("passed");
    expect(byFile.get("slow.test.js")?.ms).toBeGreaterThanOrEqual(1500);
    expect(byFile.get("fails.test.js")?.state).toBe("failed");
    expect(times).toHaveLength(2);
  });

  it("refuses to run without SCIFI_CI_TIMES, naming it", () => {
    const root = tmp();
    writeFileSync(join(root, "a.test.js"), 'it("a", () => {});\n');
    const reporter = join(REPO, "scripts", "ci-file-times.ts");
    const { SCIFI_CI_TIMES: _, ...rest } = env;
    const r = spawnSync(
      process.execPath,
      [
        join(REPO, "node_modules", "vitest", "vitest.mjs"),
        "run",
        "--root",
        root,
        "--globals",
        `--reporter=${reporter}`,
      ],
      { env: rest, encoding: "utf8" },
    );
    expect(r.status).not.toBe(0);
    expect(r.stdout + r.stderr).toContain("set SCIFI_CI_TIMES");
  });
});

describe("ci-table as a program", () => {
  it("prints both tables from the files", () => {
    const dir = tmp();
    writeFileSync(join(dir, "steps.tsv"), "tests\t1000\t1600\tok\tfg\n");
    writeFileSync(join(dir, "t.jsonl"), '{"file":"a.test.ts","ms":61000,"state":"passed"}\n');
    const out = execFileSync(
      process.execPath,
      [join(REPO, "scripts", "ci-table.ts"), join(dir, "steps.tsv"), join(dir, "t.jsonl"), "1600"],
      { encoding: "utf8" },
    );
    expect(out).toMatch(/tests\s+00:16:40\s+10:00\s+ok/);
    expect(out).toMatch(/1:01\s+passed\s+a\.test\.ts/);
  });
});
