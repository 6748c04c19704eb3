// `scifi report` on the command line: pages by folder and by run id, usage errors with exit 2.
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { type CliResult, runScifi } from "../helpers/cli.ts";
import { synthRun } from "./synth.ts";

let home: string;

function scifi(...args: string[]): Promise<CliResult> {
  return runScifi(home, args, 60_000);
}

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), "scifi-report-cli-"));
  synthRun(join(home, "runs"), "run-a", { calls: 10, workCallsPerIteration: 3 });
});

describe("scifi report", () => {
  it("writes the page next to the run by default, or where -o says", async () => {
    const byId = await scifi("report", "run-a");
    expect(byId).toMatchObject({ code: 0, stdout: `${join(home, "runs", "run-a", "report.html")}\n` });
    const out = join(home, "elsewhere.html");
    const byFolder = await scifi("report", join(home, "runs", "run-a"), "-o", out);
    expect(byFolder.code).toBe(0);
    expect(readFileSync(out, "utf8")).toMatch(/^<!doctype html>/);
  });

  it("an unknown run is a usage error that says where it looked", async () => {
    const result = await scifi("report", "no-such-run");
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `scifi report: no audit tape for 'no-such-run': looked for ${join(home, "runs", "no-such-run", "audit.jsonl")}`,
    );
  });

  it("a run and --index together, or neither, are usage errors", async () => {
    expect(await scifi("report")).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("missing <run>"),
    });
    expect(await scifi("report", "run-a", "--index", join(home, "runs"))).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("not both"),
    });
    expect(await scifi("report", "--index", join(home, "nowhere"))).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("is not a folder"),
    });
  });

  it("--index writes index.html in the runs folder", async () => {
    const result = await scifi("report", "--index", join(home, "runs"));
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/index\.html \(1 runs, \d run pages built\)/);
    expect(existsSync(join(home, "runs", "index.html"))).toBe(true);
  });

  it("--index without a folder indexes the home's runs/", async () => {
    const result = await scifi("report", "--index");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(join(home, "runs", "index.html"));
  });
});
