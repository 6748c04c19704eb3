// One run per task folder on Apptainer (issue 38.3), INSIDE the harness as the non-root user (no
// lending: the sandbox runs as that user). A run holds the folder (its work waits for a file); a
// second `scifi run` of it from another SCIFI_HOME is refused, exit 2, naming the holder's run id;
// so is a run of a sub-folder of it (a38b: nested folders); the holder then passes and the folder's
// owners are as they were. While it works, the run folder (its control/ with it) is mounted
// nowhere in its instance (the /task bind is, as the probe's positive control). The Docker twin, with lending as root and the eval, daemon and submit
// ways in: test/run/task-folder/task-folder-lock.e2e.test.ts.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "../../run/harness.ts";
import { HOLD, owners, type Ran, scifi, TASK } from "../../run/task-folder/task-folder-lock.ts";

/** The source paths (mountinfo's root field) of every mount in the run's live instances. */
function instanceMountRoots(runId: string): string[] {
  const listed = JSON.parse(
    execFileSync("apptainer", ["instance", "list", "--json"], { encoding: "utf8" }),
  ) as {
    instances: { instance: string; pid: number }[];
  };
  const name = runId.replace(/[^A-Za-z0-9_.-]/g, "_");
  const pids = listed.instances.filter((i) => i.instance.includes(name)).map((i) => i.pid);
  expect(pids.length, `no instance of run ${runId}: ${JSON.stringify(listed)}`).toBeGreaterThan(0);
  return pids.flatMap((pid) =>
    readFileSync(`/proc/${pid}/mountinfo`, "utf8")
      .split("\n")
      .map((line) => line.split(" ")[3] ?? "")
      .filter(Boolean),
  );
}

describe("one run per task folder (apptainer, inside the harness)", { timeout: 300_000 }, () => {
  it("a second run from another home is refused naming the holder; owners as they were", async () => {
    expect(process.getuid?.()).not.toBe(0);
    const root = mkdtempSync(join(tmpdir(), "scifi-folder-lock-"));
    const task = join(root, "task");
    const [home, other] = [join(root, "home"), join(root, "other")];
    for (const dir of [task, home, other]) mkdirSync(dir);
    writeFileSync(join(task, "task.md"), TASK);
    // A SAM in a sub-folder (a sub-SAM run alone): the holder's run holds it too (a38b).
    mkdirSync(join(task, "sub"));
    writeFileSync(join(task, "sub", "task.md"), TASK);
    writeFileSync(join(root, "hold.yaml"), HOLD);
    const before = owners(task);
    const args = ["run", task, "--backend", "apptainer", "--model", `scripted:${join(root, "hold.yaml")}`];
    const holder = scifi(home, args);
    let ended: Ran | undefined;
    void holder.done.then((ran) => {
      ended = ran;
    });
    try {
      const runId = await waitFor(() => {
        if (ended) throw new Error(`the holding run ended early (exit ${ended.code}):\n${ended.out}`);
        if (!existsSync(join(home, "runs"))) return undefined;
        return readdirSync(join(home, "runs"), { withFileTypes: true }).find((e) => e.isDirectory())?.name;
      }, 120_000);
      const second = await scifi(other, args).done;
      expect(second.code, second.out).toBe(2);
      expect(second.out).toContain(`is in use by run ${runId}`);
      expect(existsSync(join(other, "runs")) && readdirSync(join(other, "runs")).length).toBeFalsy();
      const nested = await scifi(other, ["run", join(task, "sub"), ...args.slice(2)]).done;
      expect(nested.code, nested.out).toBe(2);
      expect(nested.out).toContain(`is inside task folder ${task}, which is in use by run ${runId}`);
      expect(existsSync(join(other, "runs")) && readdirSync(join(other, "runs")).length).toBeFalsy();
      // The run folder is never mounted into the work sandbox (Docker: test/run/session/ctl.e2e.test.ts).
      const roots = instanceMountRoots(runId);
      expect(
        roots.some((r) => r === task || r.startsWith(`${task}/`)),
        roots.join("\n"),
      ).toBe(true);
      expect(roots.filter((r) => r.startsWith(home))).toEqual([]);
    } finally {
      writeFileSync(join(task, "release"), "");
    }
    const ran = await holder.done;
    expect(ran.code, ran.out).toBe(0);
    const after = owners(task);
    for (const [rel, owner] of Object.entries(before)) expect(after[rel], rel).toBe(owner);
  });
});
