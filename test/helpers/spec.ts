// The sandbox spec tests and benchmarks start from: what policy grants a task folder (read-write at
// /task, nothing else), no network, no GPU, one CPU. Each suite overrides the limits it tests.
import { join } from "node:path";
import { sandboxUser } from "../../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY } from "../../runner/policy/site.ts";
import { type MountSpec, type SandboxSpec, TASK_MOUNT } from "../../runner/policy/spec.ts";

export interface TaskFolderSpec {
  runId: string;
  image: string;
  taskDir: string;
  /** Also mount the folder's task.md read-only over itself, as policy does for the SAM file. */
  samFile?: boolean;
}

/** The spec for `taskDir`, run as policy would (the current user; 65534 when that is root); `overrides` replace whole fields. */
export function taskFolderSpec(base: TaskFolderSpec, overrides: Partial<SandboxSpec> = {}): SandboxSpec {
  const mounts: MountSpec[] = [
    { source: base.taskDir, target: TASK_MOUNT, readOnly: false, reason: "task folder" },
  ];
  if (base.samFile) {
    mounts.push({
      source: join(base.taskDir, "task.md"),
      target: `${TASK_MOUNT}/task.md`,
      readOnly: true,
      reason: "sam file",
    });
  }
  return {
    runId: base.runId,
    image: base.image,
    user: sandboxUser(BUILTIN_SITE_POLICY),
    taskDir: base.taskDir,
    workdir: TASK_MOUNT,
    mounts,
    network: false,
    gpus: 0,
    cpus: 1,
    memoryBytes: 512 * 1024 ** 2,
    pidsLimit: 128,
    walltimeSec: 600,
    env: {},
    labels: {},
    ...overrides,
  };
}
