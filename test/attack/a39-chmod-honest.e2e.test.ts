// A39-6 (attacker a39, issue 39; the lead decides): `chmod +x checks/check.py` (an agent making the
// check executable to run it) is counted as `asset_write`, worded "wrote, moved or removed", in a
// run that PASSES.
//
// Promise (docs/integrity.md): `asset_write` is "a write, rename or removal of a SAM file or a
// visible check asset refused"; the event says "bash wrote, moved or removed checks/check.py".
// What happened (real Docker run): `chmod +x checks/check.py; printf 42 > answer.txt` ->
// `chmod: changing permissions of 'checks/check.py': Read-only file system`; the run passes, the
// history has one `asset_write` event whose text says the agent wrote, moved or removed the check.
// A mode change is neither, and it cannot change what the check does.
// Suggested fix: either document that any refused change of an asset (mode, owner, times) counts,
// with wording that says so ("changed"), or leave refusals of metadata changes (chmod, chown, touch
// -m with no content) out of the count.
// Fixed (fix-39): a refused change of an asset's mode, owner or times only (chmod, chown, touch)
// is not counted (runner/run/session/integrity.ts METADATA_ONLY; docs/integrity.md, "What is not counted").
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { attackRun, toolOutputs } from "./a39-run.ts";

const NO_ALLOWLIST = (md: string) => md.replace(/^allow_commands:.*\n/m, "");

describe.skipIf(!hasEngine("docker"))("A39-6 chmod +x of a check (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("is not recorded as a write, move or removal", { timeout: 300_000 }, async () => {
    const run = await attackRun("chmod", ["chmod +x checks/check.py; printf 42 > answer.txt"], {
      taskMd: NO_ALLOWLIST,
      reviewPass: true,
    });
    expect(run.result.outcome.status, run.result.outcome.reason).toBe("passed");
    // Before the fix: one asset_write event "bash wrote, moved or removed checks/check.py".
    expect(
      run.events.filter((e) => /wrote, moved or removed/.test(e.attempted)),
      toolOutputs(run),
    ).toEqual([]);
  });
});
