// Every work tool against a real Docker sandbox: what the model gets back, timeouts, capping,
// refusals outside the task folder.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveSpec } from "../../runner/policy/resolve.ts";
import { loadSitePolicy, sitePolicyPath } from "../../runner/policy/site.ts";
import { parseSamSync } from "../../runner/sam/parse.ts";
import { getBackend } from "../../runner/sandbox/registry.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { runTool, workTools } from "../../runner/tools/registry.ts";
import type { ToolContext } from "../../runner/tools/tool.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { commandFollowsClock } from "./clock-follow.ts";

describe.skipIf(!hasEngine("docker"))("work tools in a docker sandbox", { timeout: 300_000 }, () => {
  let sandbox: Sandbox;
  let ctx: ToolContext;
  const root = mkdtempSync(join(tmpdir(), "scifi-tools-"));
  const taskDir = join(root, "task");

  beforeAll(async () => {
    ensureImage();
    mkdirSync(join(root, "home"));
    mkdirSync(join(taskDir, "src"), { recursive: true });
    writeFileSync(
      join(taskDir, "task.md"),
      "---\nname: tools\n---\n# Tools\n\n## To-do\nx\n\n## Expectation\n- y\n",
    );
    writeFileSync(join(taskDir, "src/a.f90"), "program a\n  print *, 'alpha'\nend program a\n");
    writeFileSync(join(taskDir, "src/b.py"), "print('beta')\nALPHA = 1\n");
    const parsed = parseSamSync(join(taskDir, "task.md"));
    if (!parsed.ok) throw new Error("test SAM invalid");
    const home = join(root, "home");
    const spec = resolveSpec(parsed.sam, loadSitePolicy(sitePolicyPath(home), false).policy, {
      home,
      runId: `tools-${process.pid}`,
    });
    sandbox = await (await getBackend("docker")).start(spec);
    ctx = { sandbox, bashTimeoutMs: 3000, maxOutputChars: 1000 };
  }, 1_800_000);
  afterAll(async () => sandbox?.stop());

  const call = (name: string, input: Record<string, unknown>, over: Partial<ToolContext> = {}) =>
    runTool(workTools, name, input, { ...ctx, ...over });

  it("bash reports exit code and both streams", async () => {
    const out = await call("bash", { command: "echo out; echo err >&2; exit 3" });
    expect(out).toEqual({ ok: false, output: "exit code: 3\nstdout:\nout\n\nstderr:\nerr\n" });
  });

  it("bash kills a command at the timeout", async () => {
    const started = Date.now();
    const out = await call("bash", { command: "sleep 30", timeout_sec: 1 });
    expect(out.ok).toBe(false);
    expect(out.output).toContain("killed (timeout)");
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("bash output keeps head and tail", async () => {
    const out = await call("bash", { command: "echo FIRST; seq 1 20000; echo LAST" });
    expect(out.output).toContain("FIRST");
    expect(out.output).toContain("LAST");
    expect(out.output).toContain("characters cut by scifi");
    expect(out.output.length).toBeLessThan(1200);
  });

  it("bash refuses a program off the allowlist and runs allowed ones", async () => {
    const refused = await call("bash", { command: "ls && cat /etc/hostname" }, { allowCommands: ["ls"] });
    expect(refused).toEqual({
      ok: false,
      output: expect.stringMatching(/^Refused: .*'cat'/),
      // The refusal is an integrity event's evidence (docs/integrity.md, allowlist_refused).
      refused: { rule: "the SAM's allow_commands", detail: expect.stringMatching(/'cat'/) },
    });
    const allowed = await call("bash", { command: "ls src" }, { allowCommands: ["ls"] });
    expect(allowed).toEqual({ ok: true, output: "exit code: 0\nstdout:\na.f90\nb.py\n" });
  });

  it("bash: the run's signal (a wall-time deadline, a cancel) kills a running command", async () => {
    const started = Date.now();
    const out = await call(
      "bash",
      { command: "sleep 30" },
      { bashTimeoutMs: 60_000, signal: AbortSignal.timeout(500) },
    );
    expect(out.ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  // The Apptainer twin: test/sandbox/apptainer/a41d-clock-follow.inner.ts.
  commandFollowsClock(() => sandbox);

  it("read_file, edit_file and write_file refuse a FIFO and /dev/zero at once (a tool error, the runner never waits)", async () => {
    expect((await call("bash", { command: "mkfifo /task/pipe /tmp/pipe && echo made" })).output).toContain(
      "made",
    );
    const started = Date.now();
    for (const [name, input] of [
      ["read_file", { path: "pipe" }],
      ["read_file", { path: "/tmp/pipe" }],
      ["read_file", { path: "/dev/zero" }],
      ["edit_file", { path: "pipe", old_text: "a", new_text: "b" }],
      ["write_file", { path: "pipe", content: "x" }],
    ] as const) {
      const out = await call(name, input);
      expect(out.ok, `${name} ${JSON.stringify(input)}`).toBe(false);
    }
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("write_file, read_file and edit_file round-trip on the host task folder", async () => {
    expect(await call("write_file", { path: "out/r.txt", content: "one\ntwo\nthree\n" })).toEqual({
      ok: true,
      output: "Wrote out/r.txt: 14 bytes, 3 lines.",
    });
    expect(readFileSync(join(taskDir, "out/r.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    expect(await call("read_file", { path: "/task/out/r.txt", offset: 2, limit: 1 })).toEqual({
      ok: true,
      output: "2\ttwo\n(lines 2-2 of 3; use offset 3 for more)",
    });
    expect(await call("edit_file", { path: "out/r.txt", old_text: "two", new_text: "TWO" })).toEqual({
      ok: true,
      output: "Edited out/r.txt:\n@@ line 2 @@\n- two\n+ TWO",
    });
    expect(readFileSync(join(taskDir, "out/r.txt"), "utf8")).toBe("one\nTWO\nthree\n");
  });

  it("write_file outside the task folder and onto the read-only SAM is refused", async () => {
    const outside = await call("write_file", { path: "/etc/evil", content: "x" });
    expect(outside.ok).toBe(false);
    const sam = await call("write_file", { path: "task.md", content: "x" });
    expect(sam.ok).toBe(false);
    expect(readFileSync(join(taskDir, "task.md"), "utf8")).toContain("name: tools");
  });

  it("glob and grep", async () => {
    expect(await call("glob", { pattern: "**/*.f90" })).toEqual({
      ok: true,
      output: "1 file(s) under /task:\nsrc/a.f90",
    });
    const grep = await call("grep", { pattern: "alpha", ignore_case: true, include: "*.py" });
    expect(grep).toEqual({ ok: true, output: "/task/src/b.py:2:ALPHA = 1\n" });
    expect(await call("grep", { pattern: "nothing-here" })).toEqual({
      ok: true,
      output: "No matches for /nothing-here/ in /task.",
    });
  });
});
