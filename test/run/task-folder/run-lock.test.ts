// The run lock: one process drives a run. A second one is refused by name before it touches the
// run; a lock left by a dead process, or by a pid that now belongs to another program, is taken over.
import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isZombie, processStart } from "../../../runner/pid-lock.ts";
import {
  lockRun,
  lockTaskFolder,
  RunLocked,
  refuseLiveRun,
  TaskFolderBusy,
} from "../../../runner/run/task-folder/run-lock.ts";
import { openRunFolder } from "../../../runner/run-folder/folder.ts";
import { refuseBusyTaskFolder, runtimeDir } from "../../../runner/task-folder-lock.ts";
import { REPO } from "../harness.ts";

function runFolder() {
  const home = mkdtempSync(join(tmpdir(), "scifi-run-lock-"));
  const folder = openRunFolder(home, "run-1");
  mkdirSync(folder.dir, { recursive: true });
  return folder;
}

function plant(file: string, owner: Record<string, unknown>): void {
  writeFileSync(file, JSON.stringify({ runId: "run-1", startedAt: "2026-11-30T00:00:00.000Z", ...owner }));
}

describe("run lock", () => {
  it("refuses a second driver while the first holds the run, naming its pid and how to stop it", () => {
    const folder = runFolder();
    const unlock = lockRun(folder, "run-1");
    expect(JSON.parse(readFileSync(folder.files.lock, "utf8"))).toMatchObject({
      pid: process.pid,
      host: hostname(),
      runId: "run-1",
      procStart: processStart(process.pid),
    });
    let refused: unknown;
    try {
      lockRun(folder, "run-1");
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(RunLocked);
    expect((refused as Error).message).toContain(
      `run run-1 is being driven by another scifi process (pid ${process.pid} on ${hostname()}`,
    );
    expect((refused as Error).message).toContain(`kill ${process.pid}`);
    unlock();
    expect(existsSync(folder.files.lock)).toBe(false);
    lockRun(folder, "run-1")();
  });

  it("takes over a lock whose process is gone", async () => {
    const folder = runFolder();
    const child = spawn(process.execPath, ["-e", ""]);
    await once(child, "exit");
    plant(folder.files.lock, { pid: child.pid, host: hostname() });
    const unlock = lockRun(folder, "run-1");
    expect(JSON.parse(readFileSync(folder.files.lock, "utf8")).pid).toBe(process.pid);
    unlock();
  });

  it("takes over a lock whose pid now belongs to another program (its start time differs)", async () => {
    const folder = runFolder();
    const other = spawn("sleep", ["30"]);
    try {
      const start = processStart(other.pid ?? 0);
      expect(start).toMatch(/^\d+$/);
      plant(folder.files.lock, { pid: other.pid, host: hostname(), procStart: String(Number(start) - 1) });
      const unlock = lockRun(folder, "run-1");
      expect(JSON.parse(readFileSync(folder.files.lock, "utf8")).pid).toBe(process.pid);
      unlock();
      // The same pid with its real start time is that process: refused.
      plant(folder.files.lock, { pid: other.pid, host: hostname(), procStart: start });
      expect(() => lockRun(folder, "run-1")).toThrow(`pid ${other.pid}`);
    } finally {
      other.kill();
    }
  });

  it("refuses a lock held on another host (its pid cannot be checked) and says which file to delete", () => {
    const folder = runFolder();
    plant(folder.files.lock, { pid: 4242, host: "compute-17" });
    expect(() => lockRun(folder, "run-1")).toThrow(
      `(pid 4242 on compute-17, since 2026-11-30T00:00:00.000Z); a run has one writer: wait for it to end, or stop it (kill 4242) and resume then. If that process is gone (its host crashed), delete ${folder.files.lock}.`,
    );
  });
});

describe("a zombie owner", () => {
  it("a killed driver not yet reaped (a zombie) holds nothing: its lock is taken over", async () => {
    // `sleep 0` exits while its parent has become `sleep 5`, which never reaps it: a zombie.
    const parent = spawn("sh", ["-c", "sleep 0 & echo $!; exec sleep 5"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    const [chunk] = (await once(parent.stdout, "data")) as [Buffer];
    const pid = Number(chunk.toString().trim());
    try {
      let zombie = false;
      // Up to 10 s: on a loaded machine the shell may take a while to exec its `sleep 5`.
      for (let i = 0; i < 500 && !zombie; i++) {
        zombie = isZombie(pid);
        if (!zombie) await new Promise((r) => setTimeout(r, 20));
      }
      expect(zombie).toBe(true);
      const folder = runFolder();
      plant(folder.files.lock, { pid, host: hostname(), procStart: processStart(pid) });
      expect(() => refuseLiveRun(folder)).not.toThrow();
      lockRun(folder, "run-1")();
    } finally {
      parent.kill("SIGKILL");
    }
  });
});

describe("one run at a time per task folder", () => {
  it("refuses a second run of a folder another run uses, naming it; free again after release", () => {
    const home = mkdtempSync(join(tmpdir(), "scifi-task-lock-"));
    const release = lockTaskFolder(home, "/data/task-a", "run-a");
    let refused: unknown;
    try {
      lockTaskFolder(home, "/data/task-a", "run-b");
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(TaskFolderBusy);
    expect((refused as Error).message).toMatch(/task folder \/data\/task-a is in use by run run-a \(pid \d+/);
    // Another folder is not held by it.
    lockTaskFolder(home, "/data/task-b", "run-c")();
    release();
    lockTaskFolder(home, "/data/task-a", "run-b")();
  });

  it("`scifi run` of a busy folder is refused before anything is written", async () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-task-busy-"));
    const home = join(root, "home");
    const task = join(root, "task");
    mkdirSync(home);
    mkdirSync(task);
    writeFileSync(
      join(task, "task.md"),
      "---\nname: busy\n---\n# T\n\n## To-do\nDo.\n\n## Expectation\n- Ok.\n  ```check\n  true\n  ```\n",
    );
    writeFileSync(join(root, "script.yaml"), "work: []\n");
    const release = lockTaskFolder(home, realpathSync(task), "run-holding");
    try {
      const child = spawn(
        process.execPath,
        [join(REPO, "bin/scifi.js"), "run", task, "--model", `scripted:${join(root, "script.yaml")}`],
        { env: { ...process.env, SCIFI_HOME: home }, stdio: ["ignore", "ignore", "pipe"] },
      );
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      const [code] = await once(child, "exit");
      expect(code).toBe(2);
      expect(stderr).toMatch(/is in use by run run-holding/);
      expect(existsSync(join(home, "runs")) ? readdirSync(join(home, "runs")) : []).toEqual([]);
    } finally {
      release();
    }
  }, 60_000);
});

describe("the task folder's lock is the folder's, not the home's or the path's", () => {
  const folder = () => {
    const root = mkdtempSync(join(tmpdir(), "scifi-task-lock-ino-"));
    mkdirSync(join(root, "task"));
    symlinkSync(join(root, "task"), join(root, "link"));
    return { root, task: join(root, "task"), link: join(root, "link") };
  };
  const refusal = (f: () => void): unknown => {
    try {
      f();
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it("two homes, or a link to the folder, meet the same lock; refuseBusyTaskFolder sees it and takes nothing", () => {
    const { root, task, link } = folder();
    const release = lockTaskFolder(join(root, "home-a"), task, "run-a");
    const other = refusal(() => lockTaskFolder(join(root, "home-b"), link, "run-b"));
    expect(other).toBeInstanceOf(TaskFolderBusy);
    expect((other as Error).message).toContain("is in use by run run-a");
    expect(refusal(() => refuseBusyTaskFolder(join(root, "home-c"), task))).toBeInstanceOf(TaskFolderBusy);
    release();
    refuseBusyTaskFolder(join(root, "home-c"), task);
    // Refused, the second lock took nothing: the folder is free for a third.
    lockTaskFolder(join(root, "home-b"), link, "run-c")();
  });

  it("a lock left by a dead run is taken over", async () => {
    const { root, task } = folder();
    const script = `import { lockTaskFolder } from ${JSON.stringify(join(REPO, "runner/task-folder-lock.ts"))};
lockTaskFolder(${JSON.stringify(join(root, "home"))}, ${JSON.stringify(task)}, "run-dead"); process.stdout.write("held\\n"); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await once(child.stdout, "data");
    expect(refusal(() => lockTaskFolder(join(root, "home"), task, "run-b"))).toBeInstanceOf(TaskFolderBusy);
    child.kill("SIGKILL");
    await once(child, "exit");
    lockTaskFolder(join(root, "other-home"), task, "run-b")();
  });

  it("a runtime folder another user could reach is refused, naming it", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-runtime-"));
    chmodSync(dir, 0o755);
    expect(() => runtimeDir({ SCIFI_RUNTIME_DIR: dir })).toThrow(
      /only it can use \(mode 0700, not a link\); it is uid \d+'s, mode 755/,
    );
    chmodSync(dir, 0o700);
    expect(runtimeDir({ SCIFI_RUNTIME_DIR: dir })).toBe(dir);
  });
});
