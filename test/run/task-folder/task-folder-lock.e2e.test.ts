// One run per task folder (issue 38.3), on Docker with real lending (the tests run as root, so the
// folder is lent to the sandbox user while the run works). One run holds a task folder (its
// scripted work waits for a file the test writes); meanwhile every other way onto that folder is
// refused with exit 2 naming the holder's run id: a `scifi run` from another SCIFI_HOME, one through
// a link to the folder, an eval of a suite holding it, `scifi submit`, and the daemon of the
// folder's inbox (its task ends `failed`, the reason naming the run). Then the holder ends `passed`,
// and every entry of the folder has the owner it had before (none is left to the sandbox user).
// Last, a holder SIGKILLed while the folder is lent: the next run (another home) takes the dead
// lock over, gives the folder back by the dead lend's record first, and passes; owners as before.
import { type ChildProcess, execFileSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listTasks } from "../../../runner/daemon/records.ts";
import { hasEngine } from "../../helpers/engines.ts";
import { ensureImage, waitFor } from "../harness.ts";
import { HOLD, owners, type Ran, scifi, TASK } from "./task-folder-lock.ts";

const OWNER = { uid: 4321, gid: 4321 };

const root = mkdtempSync(join(tmpdir(), "scifi-folder-lock-"));
const home = join(root, "home");
const other = join(root, "other-home");
const inbox = join(home, "tasks");
const task = join(inbox, "held");
const modelFile = join(root, "hold.yaml");

describe.skipIf(!hasEngine("docker"))("one run per task folder (Docker, lent as root)", () => {
  let holder: { child: ChildProcess; done: Promise<Ran> } | undefined;
  let runId = "";
  let before: Record<string, string> = {};
  const asRoot = process.getuid?.() === 0;

  beforeAll(async () => {
    ensureImage();
    mkdirSync(join(task, "data"), { recursive: true });
    mkdirSync(other);
    writeFileSync(join(task, "task.md"), TASK);
    writeFileSync(join(task, "data", "input.csv"), "1,2\n");
    writeFileSync(modelFile, HOLD);
    writeFileSync(
      join(root, "suite.yaml"),
      `tasks: [home/tasks/held]\nmodels: [{ name: m, spec: 'scripted:hold.yaml' }]\nrepeats: 1\nconcurrency: 1\n`,
    );
    symlinkSync(task, join(root, "link"));
    if (asRoot)
      for (const rel of ["", "task.md", "data", "data/input.csv"])
        chownSync(join(task, rel), OWNER.uid, OWNER.gid);
    before = owners(task);
    holder = scifi(home, ["run", task, "--model", `scripted:${modelFile}`]);
    // The lock is taken before the run's folder is made; as root, the folder is lent once work starts.
    runId = await waitFor(() => {
      if (!existsSync(join(home, "runs"))) return undefined;
      return readdirSync(join(home, "runs"), { withFileTypes: true }).find((e) => e.isDirectory())?.name;
    }, 120_000);
    if (asRoot) await waitFor(() => (lstatSync(task).uid !== OWNER.uid ? true : undefined), 60_000);
  }, 300_000);

  afterAll(async () => {
    writeFileSync(join(task, "release"), "");
    holder?.child.kill("SIGTERM");
  });

  const refusedNaming = (ran: Ran) => {
    expect(ran.code, ran.out).toBe(2);
    expect(ran.out).toContain(`is in use by run ${runId}`);
  };

  it("refuses a run from another SCIFI_HOME, and one through a link to the folder", async () => {
    refusedNaming(await scifi(other, ["run", task, "--model", `scripted:${modelFile}`]).done);
    refusedNaming(await scifi(home, ["run", join(root, "link"), "--model", `scripted:${modelFile}`]).done);
    expect(existsSync(join(other, "runs")) && readdirSync(join(other, "runs")).length).toBeFalsy();
  }, 120_000);

  it("refuses an eval of a suite holding the folder, before any trial", async () => {
    refusedNaming(await scifi(other, ["eval", join(root, "suite.yaml")], root).done);
    expect(existsSync(join(other, "evals")) && readdirSync(join(other, "evals")).length).toBeFalsy();
  }, 120_000);

  it("refuses to submit it as a SLURM job", async () => {
    refusedNaming(await scifi(other, ["submit", join(task, "task.md"), "--dry-run"]).done);
  }, 60_000);

  it("the daemon of the folder's inbox refuses it: the task fails naming the run", async () => {
    const daemon = scifi(home, ["daemon", "--model", `scripted:${modelFile}`, "--settle-ms", "300"]);
    try {
      const record = await waitFor(
        () => listTasks(home).find((t) => t.key === "held" && t.state === "failed"),
        120_000,
      );
      expect(record.reason).toContain(`is in use by run ${runId}`);
    } finally {
      daemon.child.kill("SIGTERM");
      await daemon.done;
    }
  }, 180_000);

  it("the holder then passes, and the folder's owners are as they were", async () => {
    writeFileSync(join(task, "release"), "");
    const ran = await (holder as { done: Promise<Ran> }).done;
    expect(ran.code, ran.out).toBe(0);
    const after = owners(task);
    for (const [rel, owner] of Object.entries(before)) expect(after[rel], rel).toBe(owner);
    // What the run added (and the test's release file) belongs to the folder's owner, never the sandbox's.
    if (asRoot)
      for (const [rel, owner] of Object.entries(after)) expect(owner, rel).toBe(`${OWNER.uid}:${OWNER.gid}`);
  }, 180_000);

  it("a run killed while it holds the folder (lent): the next run takes its lock over and finds the owners as they were", async () => {
    const killed = scifi(home, ["run", task, "--model", `scripted:${modelFile}`]);
    rmSync(join(task, "release"), { force: true });
    const dead = await waitFor(() => {
      const runs = readdirSync(join(home, "runs"), { withFileTypes: true }).filter((e) => e.isDirectory());
      return runs.map((e) => e.name).find((id) => id !== runId);
    }, 120_000);
    if (asRoot) await waitFor(() => (lstatSync(task).uid !== OWNER.uid ? true : undefined), 60_000);
    killed.child.kill("SIGKILL");
    await killed.done;
    // The dead run's sandbox outlives it (a resume would prune it): removed here, as prune would.
    const ids = execFileSync("docker", ["ps", "-aq", "--filter", `label=scifi.run=${dead}`], {
      encoding: "utf8",
    });
    for (const id of ids.split("\n").filter(Boolean)) execFileSync("docker", ["rm", "-f", id]);
    writeFileSync(join(task, "release"), "");
    const next = await scifi(other, ["run", task, "--model", `scripted:${modelFile}`]).done;
    expect(next.code, next.out).toBe(0);
    const after = owners(task);
    for (const [rel, owner] of Object.entries(before)) expect(after[rel], rel).toBe(owner);
    if (asRoot)
      for (const [rel, owner] of Object.entries(after)) expect(owner, rel).toBe(`${OWNER.uid}:${OWNER.gid}`);
  }, 240_000);
});
