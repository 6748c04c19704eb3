// `scifi eval` as a user meets it without running a trial: usage errors exit 2 and say what to do,
// an invalid suite lists its problems, `eval report` writes the page of an eval's summary; and the
// batch script of a `--slurm` trial runs `scifi eval trial` through `scifi submit`'s script.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createEval } from "../../runner/eval/engine.ts";
import { readResults, writeSummary } from "../../runner/eval/summary-files.ts";
import { renderPlacementScript } from "../../runner/jobs/placement.ts";
import { runScifi } from "../helpers/cli.ts";

const FIXTURES = join(import.meta.dirname, "fixtures");

describe("scifi eval (no trial runs)", () => {
  it("usage errors exit 2 with what to do", async () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-eval-cli-"));
    const none = await runScifi(home, ["eval"], 60_000);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("give a suite (a suite file or a folder of task folders), or --resume ID");
    const both = await runScifi(home, ["eval", "--resume", "x", "--models", "scripted:a.yaml"], 60_000);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--resume runs the eval's own plan (eval.json)");
    const repeats = await runScifi(home, ["eval", join(FIXTURES, "suite.yaml"), "--repeats", "0"], 60_000);
    expect(repeats.code).toBe(2);
    expect(repeats.stderr).toContain("--repeats '0' must be a whole number >= 1");
    const missing = await runScifi(home, ["eval", "--resume", "nope"], 60_000);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("no eval 'nope'");
  }, 120_000);

  it("an invalid suite: exit 2, every problem with its line", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-eval-cli-"));
    cpSync(FIXTURES, root, { recursive: true });
    writeFileSync(join(root, "bad.yaml"), "tasks: [suite/echo]\nrepeat: 3\n");
    const r = await runScifi(root, ["eval", join(root, "bad.yaml")], 60_000);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("the suite is not valid:");
    expect(r.stderr).toMatch(/bad\.yaml:2: unknown key 'repeat' \(did you mean 'repeats'\?\)/);
  }, 60_000);

  it("eval report writes the page of the eval's summary, escaped, scripted labelled", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-eval-cli-"));
    cpSync(FIXTURES, root, { recursive: true });
    const home = join(root, "home");
    const { evalDir, plan } = await createEval({ home, suite: join(root, "suite.yaml") });
    writeSummary(evalDir, plan, readResults(evalDir, plan), false);
    const r = await runScifi(home, ["eval", "report", plan.evalId], 60_000);
    expect(r.code, r.stderr).toBe(0);
    // The page's path on the first line, then the variant table (variants as columns) per model.
    const [first, ...rest] = r.stdout.split("\n");
    expect(first).toBe(join(evalDir, "report.html"));
    expect(rest.join("\n")).toContain("variants as columns (SciFi Table 1)");
    expect(rest).toContain("half [SCRIPTED]");
    expect(rest.some((line) => /^ {2}task +nl +st$/.test(line))).toBe(true);
    const page = readFileSync(join(evalDir, "report.html"), "utf8");
    expect(page).toContain(
      "12 trials planned: 0 passed, 0 failed, 0 infrastructure errors (counted apart), 12 not run yet",
    );
    expect(page).toContain('<span class="model">half</span><span class="scripted">scripted</span>');
    const gone = await runScifi(home, ["eval", "report", "nope"], 60_000);
    expect(gone.code).toBe(2);
  }, 60_000);

  it("a --slurm trial's batch script runs `scifi eval trial` with the node's backend", () => {
    const script = renderPlacementScript({
      sbatchArgs: ["--job-name=scifi-echo"],
      samFile: "/suite/echo/task.nl.md",
      home: "/home/u/scifi",
      submitDir: "/home/u/scifi/submits/x",
      scifiCommand: ["/usr/bin/node", "/opt/scifi/bin/scifi.js"],
      backend: "auto",
      command: ["eval", "trial", "20260101-000000-suite-abcdef", "echo.nl.pass.r0"],
    });
    expect(script.trim().split("\n").at(-1)).toBe(
      `exec /usr/bin/node /opt/scifi/bin/scifi.js eval trial 20260101-000000-suite-abcdef echo.nl.pass.r0 --backend "$backend"`,
    );
  });
});
