// `scifi validate` as users run it: a real child process of bin/scifi.js.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const repo = join(import.meta.dirname, "..", "..");
const bin = join(repo, "bin", "scifi.js");

function scifi(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [bin, ...args], { cwd: repo, encoding: "utf8", timeout: 30_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe("scifi validate", () => {
  it("exits 0 for the examples folder, one OK line per SAM (sub-SAM files not listed alone)", () => {
    const run = scifi("validate", "tasks/examples");
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    const lines = run.stdout.trim().split("\n");
    expect(lines).toEqual(
      expect.arrayContaining([
        "tasks/examples/gfortran-build-run/task.ex.md: OK (gfortran-build-run: 1 SAM, 2 checks; hidden from the agents: checks/expected_output.txt)",
        "tasks/examples/gfortran-build-run/task.md: OK (gfortran-build-run: 1 SAM, 4 checks; hidden from the agents: checks/expected_output.txt; judged by the review alone: root/e3)",
        "tasks/examples/gfortran-build-run/task.nl.md: OK (gfortran-build-run: 1 SAM, 2 checks; hidden from the agents: checks/expected_output.txt)",
        "tasks/examples/gfortran-build-run/task.st.md: OK (gfortran-build-run: 1 SAM, 2 checks; hidden from the agents: checks/expected_output.txt)",
        "tasks/examples/pandas-csv-aggregation/task.ex.md: OK (pandas-csv-aggregation: 1 SAM, 3 checks)",
        "tasks/examples/pandas-csv-aggregation/task.md: OK (pandas-csv-aggregation: 1 SAM, 3 checks)",
        "tasks/examples/pandas-csv-aggregation/task.nl.md: OK (pandas-csv-aggregation: 1 SAM, 3 checks)",
        "tasks/examples/pandas-csv-aggregation/task.st.md: OK (pandas-csv-aggregation: 1 SAM, 3 checks)",
        "tasks/examples/root-gaussian-fit/task.md: OK (root-gaussian-fit: 1 SAM, 3 checks)",
        "tasks/examples/two-level-subsams/task.md: OK (two-level-subsams: 3 SAMs, 6 checks)",
        "tasks/examples/verilator-counter-debug/task.ex.md: OK (verilator-counter-debug: 1 SAM, 3 checks)",
        "tasks/examples/verilator-counter-debug/task.md: OK (verilator-counter-debug: 1 SAM, 3 checks)",
        "tasks/examples/verilator-counter-debug/task.nl.md: OK (verilator-counter-debug: 1 SAM, 3 checks)",
        "tasks/examples/verilator-counter-debug/task.st.md: OK (verilator-counter-debug: 1 SAM, 3 checks)",
      ]),
    );
    // Every line is an OK line, in sorted path order; analyse.md (a sub-SAM file) is not listed alone.
    for (const line of lines) expect(line).toMatch(/^tasks\/examples\/.*\/task(\.(nl|st|ex))?\.md: OK \(/);
    expect(lines).toEqual([...lines].sort());
  });

  it("exits 1 and lists every diagnostic when any file is invalid", () => {
    const run = scifi(
      "validate",
      "tasks/examples/pandas-csv-aggregation/task.md",
      "test/fixtures/sam/malformed/wrong-type-network.md",
    );
    expect(run.status).toBe(1);
    expect(run.stdout).toBe(
      [
        "tasks/examples/pandas-csv-aggregation/task.md: OK (pandas-csv-aggregation: 1 SAM, 3 checks)",
        "test/fixtures/sam/malformed/wrong-type-network.md:2:10: error: `network`: expected `true`, `false` or a list of hosts, got the text `yes`; for example `network: [data.example.org]`",
        "test/fixtures/sam/malformed/wrong-type-network.md:3:6: error: `gpu`: expected a GPU count (0 or more), got `-1`; for example `gpu: 1`",
        "",
      ].join("\n"),
    );
  });

  it("says which check assets are hidden, and warns when an asset shares its folder with other files", () => {
    const dir = mkdtempSync(join(tmpdir(), "sam-hidden-"));
    mkdirSync(join(dir, "checks"));
    mkdirSync(join(dir, "tb"));
    writeFileSync(join(dir, "checks", "ref.sv"), "module ref; endmodule\n");
    writeFileSync(join(dir, "tb", "tb.sv"), "module tb; endmodule\n");
    writeFileSync(join(dir, "tb", "dut.sv"), "module dut; endmodule\n");
    const sam = join(dir, "task.md");
    writeFileSync(
      sam,
      "---\nname: hidden-demo\ncheck_assets: [tb/tb.sv]\nhidden_assets: [checks/ref.sv]\n---\n# T\n\n## To-do\nDo.\n\n## Expectation\n- Ok.\n  ```check hidden\n  true\n  ```\n",
    );
    const run = scifi("validate", sam);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(
      [
        `${sam}:3:16: warning: check asset \`tb/tb.sv\` shares \`tb/\` with files that are not check assets; a file the agent adds there can shadow it (an included header, an imported module). Move the check assets into a folder of their own (e.g. checks/) that holds nothing else`,
        `${sam}: OK (hidden-demo: 1 SAM, 1 check; hidden from the agents: checks/ref.sv)`,
        "",
      ].join("\n"),
    );
    const json = JSON.parse(scifi("validate", "--json", sam).stdout) as [
      { sam: { metadata: { checkAssets: string[]; hiddenAssets: string[] } } },
    ];
    expect(json[0].sam.metadata.checkAssets).toEqual(["tb/tb.sv", "checks/ref.sv"]);
    expect(json[0].sam.metadata.hiddenAssets).toEqual(["checks/ref.sv"]);
  });

  it("exits 2 on usage errors: no arguments, a missing path, a folder without SAMs", () => {
    expect(scifi("validate").status).toBe(2);
    const missing = scifi("validate", "no/such/task.md");
    expect(missing.status).toBe(2);
    expect(missing.stderr).toBe("scifi validate: no such file or folder: no/such/task.md\n");
    const empty = mkdtempSync(join(tmpdir(), "sam-empty-"));
    writeFileSync(join(empty, "README.md"), "# Not a SAM\n");
    const none = scifi("validate", empty);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("no SAM files under");
  });

  it("--json prints the parsed trees, identical across runs", () => {
    const first = scifi("validate", "--json", "tasks/examples");
    const second = scifi("validate", "--json", "tasks/examples");
    expect(first.status).toBe(0);
    expect(first.stdout).toBe(second.stdout);
    const entries = JSON.parse(first.stdout) as {
      file: string;
      ok: boolean;
      sam: { sha256: string; root: { items: { checks: { command: string }[] }[] } };
    }[];
    expect(entries.length).toBeGreaterThanOrEqual(5);
    for (const entry of entries) {
      expect(entry.ok).toBe(true);
      expect(entry.file.startsWith("/")).toBe(true);
      expect(entry.sam.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
    const verilator = entries.find((e) => e.file.endsWith("verilator-counter-debug/task.md"));
    expect(verilator?.sam.root.items[0]?.checks[0]?.command).toBe(
      "mkdir -p .check && sh checks/run_tb.sh .check/trace.txt",
    );
  });

  it("--json reports diagnostics of invalid files and exits 1", () => {
    const run = scifi("validate", "--json", "test/fixtures/sam/malformed/missing-todo.md");
    expect(run.status).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual([
      {
        file: join(repo, "test/fixtures/sam/malformed/missing-todo.md"),
        ok: false,
        diagnostics: [
          {
            column: 1,
            file: "test/fixtures/sam/malformed/missing-todo.md",
            line: 1,
            message: "SAM `Only an expectation` has no To-do section; add `## To-do` saying what to do",
            severity: "error",
          },
        ],
      },
    ]);
  });

  it("has --help", () => {
    const run = scifi("validate", "--help");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("Usage: scifi validate [options] <paths...>");
  });
  it("refuses a SAM naming an unknown skill, with a suggestion", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-validate-skill-"));
    const file = join(dir, "task.md");
    writeFileSync(
      file,
      "---\nname: skill-typo\nskills: [verilater]\n---\n# Skill typo\n\n## To-do\nLint.\n\n## Expectation\n- Clean.\n",
    );
    const run = scifi("validate", file);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe(
      `${file}:3:10: error: unknown skill 'verilater' (did you mean 'verilator'?); available skills: analysis-generic, common-env, gfortran, lhco, python-data, root, slurm, verilator\n`,
    );
  });
});
