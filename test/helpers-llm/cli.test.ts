// The helper commands through the real `scifi` binary (spawned): registration, flags, exit codes.
// Models are SCRIPTED.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const REPO = join(import.meta.dirname, "..", "..");
const FIXTURES = join(REPO, "test", "fixtures", "helpers");

function scifi(args: string[], home: string) {
  const r = spawnSync(process.execPath, [join(REPO, "bin", "scifi.js"), ...args], {
    encoding: "utf8",
    env: { ...process.env, SCIFI_HOME: home },
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe("helper commands via bin/scifi.js (scripted models)", () => {
  it("make-task -o writes a valid SAM and validate accepts it", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-cli-helpers-"));
    const out = join(home, "fit.md");
    const r = scifi(
      [
        "make-task",
        "Fit a Gaussian to the energy column of data/energies.csv and write mu and sigma to out/fit.json",
        "-o",
        out,
        "--model",
        `scripted:${join(FIXTURES, "make-task", "repair.yaml")}`,
      ],
      home,
    );
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(existsSync(out)).toBe(true);
    expect(r.out).toContain("[SCRIPTED model: replies come from");
    expect(scifi(["validate", out], home).code).toBe(0);
    expect(readFileSync(out, "utf8")).toContain("# network: true");
  });

  it("oracle --json prints the report on stdout and the tape path on stderr", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-cli-helpers-"));
    const r = scifi(
      [
        "oracle",
        join(FIXTURES, "oracle", "dijet.md"),
        "--json",
        "--model",
        `scripted:${join(FIXTURES, "oracle", "good.yaml")}`,
      ],
      home,
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).findings).toHaveLength(2);
    expect(r.err).toMatch(/audit tape: .*runs\/oracle-\d{8}T\d{6}Z-[0-9a-f]{6}\/audit\.jsonl/);
    // A scripted answer says so, like a scripted run.
    expect(r.err).toMatch(/audit\.jsonl \[SCRIPTED model: replies come from .*good\.yaml\]$/m);
  });

  it("oracle with a reply of the wrong shape names the reply's line and field, not only 'no reply left'", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-cli-helpers-"));
    const r = scifi(
      [
        "oracle",
        join(FIXTURES, "oracle", "dijet.md"),
        "--model",
        `scripted:${join(FIXTURES, "oracle", "wrong-shape.yaml")}`,
      ],
      home,
    );
    expect(r.code).toBe(1);
    expect(r.err).toContain("the oracle's reply wrong-shape.yaml:3 did not fit");
    expect(r.err).toMatch(/findings: Invalid input: expected array, received undefined/);
    expect(r.err).toContain("has no reply left");
    expect(r.err).toContain("[SCRIPTED model: replies come from");
  });

  it("bad input exits 2 with a message: unknown run, missing model config", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-cli-helpers-"));
    const run = scifi(["make-skill", "no-such-run", "--model", "scripted:x.yaml"], home);
    expect(run.code).toBe(2);
    expect(run.err).toContain("no run 'no-such-run'");
    const noModel = scifi(["oracle", join(FIXTURES, "oracle", "dijet.md")], home);
    expect(noModel.code).toBe(2);
    expect(noModel.err).toContain("no model configured");
  });
});
