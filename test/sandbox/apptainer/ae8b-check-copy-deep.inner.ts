// AE-8b-3 (attacker session on AE-8, written from docs/loop.md "Checks in stages" and docs/eval.md). Was broken; now a host-side step that fails on the task folder's content ends the run failed
// (runner/run/task-folder/task-folder-problem.ts).
// Promise (docs/eval.md): "An agent cannot make its own failure an `error`"; docs/loop.md: a run
// stage of a task with hidden assets runs "on a throw-away copy of it, `runs/<id>/checks-copy/`:
// links copied as links, FIFOs and devices left out, sparse files kept sparse, at most 16 GiB";
// docs/sandbox.md: walks "use an explicit stack ... so no depth stops them"; trust.md rule 4.
// What the agent did (task with `hidden_assets`, Apptainer, where no lending runs first): it made a
// chain of 2,100 nested folders `deep/d/d/.../d` in its work pass and reported done.
// What happened: before the checks the runner copies the task folder (runner/run/checks/check-copy.ts
// copyForChecks) with path-based mkdirSync: "ENAMETOOLONG: name too long, mkdir
// '<home>/runs/<id>/checks-copy/deep/d/d/...'" escapes runTask (history ends at work_end: no
// check, no verdict, no run_end), so `scifi eval` counts an `error` and `--retry-errors` reruns it.
// On Docker with a root runner the lending's getfacl fails first (AE-8b-1), with the same effect.
// Fix idea: copy with the fd-relative walk the other walks use (mkdirat/openat relative to the
// opened parent, as tree-walk.ts does), and make a copy that cannot be made (too deep, over 16 GiB,
// a name it cannot write) fail the run stage or the run as the task's failure (a RunEnding naming
// the entry), never a raw Error; removeCopy needs the same treatment.
// Runs INSIDE the Apptainer harness (bash scripts/apptainer-harness.sh test THIS_FILE).
import { describe, expect, it } from "vitest";
import { evalStatus, probe } from "../../attack/ae8b-probe.ts";

const DEEP = `python3 -c "
import os
os.mkdir('deep'); os.chdir('deep')
for i in range(2100):
    os.mkdir('d'); os.chdir('d')
print('made')"`;

describe("AE-8b-3 a deep folder chain in a task with hidden assets (apptainer)", { timeout: 300_000 }, () => {
  it("the checks' copy is made or refused, and the run is judged", async () => {
    const p = await probe({
      backend: "apptainer",
      hidden: true,
      work: [`echo ok > out.txt; printf 'echo ok\\n' > run.sh; ${DEEP}`],
      reviewPass: true,
    });
    // It THREW "Error: ENAMETOOLONG: name too long, mkdir '<home>/runs/<id>/checks-copy/deep/d/d/...'".
    // Now the view leaves a path too long to copy out (listed), and the honest work is judged: a pass.
    expect(p.thrown).toBeUndefined();
    expect(evalStatus(p)).toBe("pass");
  });
});
