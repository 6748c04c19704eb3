// `scifi check-task` on Apptainer, INSIDE the harness as the non-root user: the audits' runs use
// the Apptainer backend's sandboxes and check stages, as a run there would; a sound task (a run
// stage and a compare stage against a hidden reference) is sound with its solution, and a check
// that passes on the untouched folder is found.
import { describe, expect, it } from "vitest";
import { auditTask } from "../../../runner/check-task/audit.ts";
import { taskRoot } from "../../check-task/tasks.ts";

describe("check-task on apptainer (inside the harness, non-root)", { timeout: 600_000 }, () => {
  it("a sound task with its solution is sound; checks that pass untouched are found", async () => {
    expect(process.getuid?.()).not.toBe(0);
    const ws = taskRoot(["sound", "nothing-passes"]);
    const sound = await auditTask(`${ws.root}/sound`, {
      home: ws.home,
      solution: ws.solution,
      backend: "apptainer",
    });
    expect(sound.audits.map((a) => [a.audit, a.status])).toEqual([
      ["untouched", "failed"],
      ["solution", "passed"],
      ["nothing", "failed"],
      ["empty", "failed"],
      ["constants", "failed"],
    ]);
    expect(sound.sound).toBe(true);
    expect(sound.backend).toBe("apptainer");
    const lazy = await auditTask(`${ws.root}/nothing-passes`, { home: ws.home, backend: "apptainer" });
    expect(lazy.sound).toBe(false);
    expect(lazy.findings.map((f) => f.audit)).toEqual(["untouched", "nothing", "constants"]);
  });
});
