// The shipped site-policy.example.yaml is a valid policy for every module that reads it.
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_JOBS_POLICY, loadJobsPolicy } from "../../runner/jobs/policy.ts";
import { loadSitePolicy } from "../../runner/policy/site.ts";
import { REPO } from "../run/harness.ts";

const EXAMPLE = join(REPO, "site-policy.example.yaml");

describe("site-policy.example.yaml", () => {
  it("loads as a site policy, daemon keys included", () => {
    const { policy } = loadSitePolicy(EXAMPLE, true);
    expect(policy).toMatchObject({ totalGpus: 0, usdPerDay: 50, daemonPlacement: "local" });
    expect(policy.onFinish).toContain("$SCIFI_TASK_STATE");
    expect(policy).toMatchObject({ approvalTimeoutSec: 24 * 3600 });
    expect(policy.onApproval).toContain("$SCIFI_APPROVE_COMMAND");
  });

  it("its jobs section loads as the jobs policy", () => {
    expect(loadJobsPolicy(EXAMPLE)).toEqual({
      ...DEFAULT_JOBS_POLICY,
      partition: undefined,
      account: undefined,
    });
  });

  it("placement accepts only local or slurm", async () => {
    const { parseSitePolicy } = await import("../../runner/policy/site.ts");
    expect(() => parseSitePolicy("daemon:\n  placement: cluster\n", "x.yaml")).toThrow(
      /daemon\.placement: must be local or slurm/,
    );
  });
});
