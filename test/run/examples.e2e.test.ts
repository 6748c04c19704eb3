// The example tasks run to a verified pass: real Docker sandbox, the runner's own checks (the real
// Verilator testbench, the real gfortran build), scripted models over HTTP.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { verifyTape } from "../../runner/audit/verify.ts";
import { parseEntries } from "../../runner/memory/entries.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "./harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "examples pass end to end (docker, scripted models)",
  { timeout: 900_000 },
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("verilator: the agent fixes the injected bug with edit_file and the runner's testbench passes", async () => {
      const ws = workspace("verilator-counter-debug");
      const { result, history } = await runScripted(ws, "verilator-pass.yaml");
      expect(result.outcome).toEqual({ status: "passed", reason: "every check and review item passed" });
      expect(readFileSync(join(ws.taskDir, "rtl/counter.v"), "utf8")).toContain("LAST = WIDTH'(N - 1);");
      const checks = history.filter((e) => e.type === "check");
      expect(checks.map((c) => [c.type === "check" && c.check, c.type === "check" && c.passed])).toEqual([
        ["root/check-1", true],
        ["root/check-2", true],
        ["root/check-3", true],
      ]);
      expect(history.map((e) => e.type)).toEqual([
        "run_start",
        "iteration_start",
        "prescan",
        "work_end",
        "check",
        "check",
        "check",
        "verdict",
        "node_complete",
        "iteration_end",
        "final_review",
        "run_end",
      ]);
      expect(verifyTape(join(result.dir, "audit.jsonl"))).toMatchObject({ ok: true });
      const group = parseEntries(readFileSync(join(ws.home, "memory/groups/rtl-debugging.md"), "utf8"));
      expect(group).toHaveLength(1);
      expect(group[0]?.body).toContain("Run the testbench first");
      for (const f of ["sam.md", "sam.json", "spec.json", "state.json", "history.jsonl", "audit.jsonl"]) {
        expect(existsSync(join(result.dir, f)), f).toBe(true);
      }
      expect(readFileSync(join(result.dir, "sam.md"))).toEqual(readFileSync(ws.sam));
    });

    it("gfortran: the Makefile is fixed, the program builds and runs, the output matches", async () => {
      const ws = workspace("gfortran-build-run");
      const { result, history } = await runScripted(ws, "gfortran-pass.yaml");
      expect(result.outcome.status).toBe("passed");
      expect(history.filter((e) => e.type === "check").every((e) => e.type === "check" && e.passed)).toBe(
        true,
      );
      expect(readFileSync(join(ws.taskDir, "results/stats.txt"), "utf8")).toBe(
        readFileSync(join(ws.taskDir, "checks/expected_output.txt"), "utf8"),
      );
    });

    it("sub-SAMs: both children complete before the parent's Expectation is judged", async () => {
      const ws = workspace("two-level-subsams");
      const { result, history } = await runScripted(ws, "subsams-pass.yaml");
      expect(result.outcome.status).toBe("passed");
      const order = history.flatMap((e) =>
        e.type === "node_complete" || e.type === "verdict" ? [`${e.type}:${e.node}`] : [],
      );
      expect(order).toEqual([
        "verdict:root/1",
        "node_complete:root/1",
        "verdict:root/2",
        "node_complete:root/2",
        "verdict:root",
        "node_complete:root",
      ]);
      expect(result.iterations).toBe(3);
    });
  },
);
