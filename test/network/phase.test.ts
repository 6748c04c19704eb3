// Only the work sandbox gets the SAM's network: checks and the review get none, host list included;
// a changed host list between starts is a changed grant.
import { describe, expect, it } from "vitest";
import { grantDifferences } from "../../runner/run/gates/grant.ts";
import { phaseSpec } from "../../runner/run/session/sandboxes.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

const rules = { allow: ["data.example.org"], deny: [], allowedPrivateRanges: [] };
const spec = taskFolderSpec(
  { runId: "r", image: "scifi-sci:local", taskDir: "/tmp/x" },
  { networkRules: rules },
);

describe("network by phase", () => {
  it("the work sandbox keeps the host list; checks and review lose it", () => {
    expect(phaseSpec(spec, "work", { files: [], folders: [] }).networkRules).toEqual(rules);
    for (const role of ["checks", "compare", "review"] as const) {
      const s = phaseSpec(spec, role, { files: [], folders: [] });
      expect(s.networkRules, role).toBeUndefined();
      expect(s.network, role).toBe(false);
    }
  });

  it("a changed host list is a changed grant", () => {
    const wider = { ...spec, networkRules: { ...rules, allow: ["data.example.org", "other.org"] } };
    expect(grantDifferences(spec, wider).join()).toContain("networkRules was");
    expect(grantDifferences(spec, spec)).toEqual([]);
  });
});
