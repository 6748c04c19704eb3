// HELD (attacker helper, issue 28; fixed on r4-fixcrit): the person asked to accept a PASS does not see the code.
//
// What the docs promise: docs/critique.md (modes table, `approve`): "the request lists each finding
// with its verified lines"; docs/approval.md: "the request lists each finding with its lines";
// trust.md rule 11: what a person decides on is shown as it is.
//
// What happened (Docker, scripted, `critique: approve`, lhco-critique-one.yaml): the request's detail
// is `- definition_mismatch at root/t4 (analysis.py:39, analysis.py:35): <the model's reason>`, the
// line numbers and the model's claim, not the lines the runner verified (the record has them), so
// the person decides on the model's word (runner/run/gates/gates.ts acceptCritique).
import { readFileSync, writeFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { decide, pendingApprovals } from "../../runner/approval/store.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage, runScripted, workspace } from "../run/harness.ts";

describe.skipIf(!hasEngine("docker"))(
  "held: the critique approval request (scripted)",
  { timeout: 240_000 },
  () => {
    beforeAll(() => ensureImage());

    it("shows the verified code lines of each finding", async () => {
      const ws = workspace("lhco-dijet-selection");
      writeFileSync(
        ws.sam,
        readFileSync(ws.sam, "utf8").replace("skills: [lhco]\n", "skills: [lhco]\ncritique: approve\n"),
      );
      process.env.SCIFI_APPROVAL_POLL_MS = "100";
      let detail = "";
      const decider = setInterval(() => {
        for (const view of pendingApprovals(ws.home)) {
          detail = view.request.detail;
          decide(ws.home, view.runId, view.request.id, true, "seen");
        }
      }, 200);
      try {
        await runScripted(ws, "lhco-critique-one.yaml");
        expect(detail).toContain('if any(j["btag"] > 0 for j in jets):');
      } finally {
        clearInterval(decider);
        delete process.env.SCIFI_APPROVAL_POLL_MS;
      }
    });
  },
);
