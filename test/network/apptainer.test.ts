// Apptainer has no run proxy yet: a host list is an error there, never a silently empty grant.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { createApptainerBackend } from "../../runner/sandbox/apptainer.ts";
import { taskFolderSpec } from "../helpers/spec.ts";

describe("network host list on apptainer", () => {
  it("refuses to start rather than ignore the rules", async () => {
    const taskDir = mkdtempSync(join(tmpdir(), "scifi-net-app-"));
    const spec = taskFolderSpec(
      { runId: `net-app-${process.pid}`, image: "scifi-base:bookworm", taskDir },
      { networkRules: { allow: ["data.example.org"], deny: [], allowedPrivateRanges: [] } },
    );
    const backend = createApptainerBackend({ apptainer: "/nonexistent/apptainer" });
    await expect(backend.start(spec)).rejects.toThrow(
      /host list in `network` .* not supported on Apptainer yet/,
    );
  });
});
