// The critique phase on Apptainer, INSIDE the harness as the non-root user (scripted tracer and
// critique, labelled scripted): the lhco example's wrong veto passes its check; the tracer runs in
// an instance of its own that sees the task folder read-only; the definition mismatch is verified
// on the code; `critique: report` leaves the PASS and counts it.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readTape } from "../../../runner/audit/verify.ts";
import type { CritiqueRecord } from "../../../runner/critique/schema.ts";
import { sifFileName } from "../../../runner/sandbox/apptainer.ts";
import { runScripted, workspace } from "../../run/harness.ts";

const IMAGE = "scifi-sci:local";

describe("critique phase on apptainer (inside the harness, non-root)", { timeout: 300_000 }, () => {
  beforeAll(() => {
    expect(process.getuid?.()).not.toBe(0);
    const sif = join(process.env.SCIFI_SIF_CACHE ?? "/var/cache/scifi/sif", sifFileName(IMAGE));
    expect(existsSync(sif), `no SIF for ${IMAGE} at ${sif}`).toBe(true);
  });

  it("report: the tracer has no bash; the mismatch is verified and reported, the PASS stands", async () => {
    const ws = workspace("lhco-dijet-selection");
    const { result, history } = await runScripted(ws, "lhco-critique-one.yaml", { backend: "apptainer" });
    expect(result.outcome.status).toBe("passed");
    expect(history.find((e) => e.type === "critique")).toMatchObject({ mode: "report", effect: "none" });
    const record = JSON.parse(
      readFileSync(join(result.dir, "critique", "it1.json"), "utf8"),
    ) as CritiqueRecord;
    expect(record.findings[0]).toMatchObject({ type: "definition_mismatch", verified: true });
    const tracer = readTape(join(result.dir, "audit.jsonl"), { tolerant: true }).filter(
      (r) => r.kind === "call" && r.role === "tracer",
    );
    // No command tool for the tracer (the agent's code never runs where it is judged): the probe is refused.
    expect(JSON.stringify(tracer[1])).toContain(
      "Unknown tool 'bash'. Available tools: read_file, glob, grep.",
    );
    expect(readdirSync(ws.taskDir)).not.toContain("tracer-probe");
  });
});
