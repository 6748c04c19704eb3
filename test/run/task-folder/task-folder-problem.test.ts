// Which host-side failures are the task's (runner/run/task-folder/task-folder-problem.ts): a step that failed on
// a path in the task folder or its checks copy, directly or wrapped; never the host running out of
// something, never a failure elsewhere.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import {
  TaskFolderUnusable,
  taskFolderProblem,
} from "../../../runner/run/task-folder/task-folder-problem.ts";
import { RunEnding } from "../../../runner/run-ending.ts";
import { SandboxError } from "../../../runner/sandbox/types.ts";

const root = mkdtempSync(join(tmpdir(), "tfp-"));
const task = join(root, "task");
const copy = join(root, "run", "checks-copy");
afterAll(() => rmSync(root, { recursive: true, force: true }));

const errno = (code: string, path: string) =>
  Object.assign(new Error(`${code}: failed, mkdir '${path}'`), { code, path, syscall: "mkdir" });

describe("taskFolderProblem", () => {
  it("an errno error on a path in the task folder or its checks copy ends the run failed, naming it", () => {
    const deep = join(task, "deep", ..."d".repeat(400).split(""));
    const found = taskFolderProblem(errno("ENAMETOOLONG", deep), [task, copy]);
    expect(found).toBeInstanceOf(TaskFolderUnusable);
    expect(found).toBeInstanceOf(RunEnding);
    expect(found?.message).toMatch(
      /^the runner could not handle the task folder as the agent left it \(ENAMETOOLONG at deep\/d\/d/,
    );
    // The kilobytes-long path is cut.
    expect(found?.message.length).toBeLessThan(800);
    expect(taskFolderProblem(errno("EACCES", join(copy, "x")), [task, copy])?.message).toContain(
      "EACCES at x",
    );
  });

  it("a helper program that named the folder, wrapped in a SandboxError, is found through the cause", async () => {
    mkdirSync(task, { recursive: true });
    const failed = await promisify(execFile)("ls", ["--", join(task, "missing")]).catch((e: unknown) => e);
    const wrapped = Object.assign(new SandboxError("cannot lend the task folder to uid 65534: ..."), {
      cause: failed,
    });
    expect(taskFolderProblem(wrapped, [task])?.message).toMatch(
      /\(a helper program failed\): ls: cannot access/,
    );
  });

  it("the host running out of something, a path elsewhere, or an ending already stays what it was", () => {
    expect(taskFolderProblem(errno("ENOSPC", join(task, "x")), [task])).toBeUndefined();
    expect(taskFolderProblem(errno("EMFILE", join(task, "x")), [task])).toBeUndefined();
    expect(taskFolderProblem(errno("EACCES", "/var/lib/docker/x"), [task])).toBeUndefined();
    expect(taskFolderProblem(errno("EACCES", `${task}-other/x`), [task])).toBeUndefined();
    expect(taskFolderProblem(new SandboxError(`engine gone while reading ${task}`), [task])).toBeUndefined();
    expect(taskFolderProblem(new TaskFolderUnusable("x"), [task])).toBeUndefined();
  });
});
