// Shared set-up for the inner Apptainer suites: a temporary task folder and a spec for it.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SandboxSpec, TASK_MOUNT } from "../../../runner/policy/spec.ts";

/** The image the harness script made a SIF for; inside the harness a missing one is an error. */
export function testImage(): string {
  const image = process.env.SCIFI_APPTAINER_TEST_IMAGE;
  if (!image) {
    throw new Error(
      "SCIFI_APPTAINER_TEST_IMAGE is not set: run these suites through bash scripts/apptainer-harness.sh test",
    );
  }
  return image;
}

let counter = 0;

/** A fresh task folder with a SAM file, and the spec that policy would grant for it. */
export async function taskSpec(overrides: Partial<SandboxSpec> = {}): Promise<SandboxSpec> {
  const taskDir = await mkdtemp(join(tmpdir(), "scifi-task-"));
  await writeFile(join(taskDir, "task.md"), "---\ntitle: t\n---\n# To-do\nx\n# Expectation\ny\n");
  const runId = `t${process.pid}-${Date.now()}-${counter++}`;
  return {
    runId,
    image: testImage(),
    user: { uid: process.getuid?.() ?? 1000, gid: process.getgid?.() ?? 1000 },
    taskDir,
    workdir: TASK_MOUNT,
    mounts: [
      { source: taskDir, target: TASK_MOUNT, readOnly: false, reason: "task folder" },
      {
        source: join(taskDir, "task.md"),
        target: `${TASK_MOUNT}/task.md`,
        readOnly: true,
        reason: "sam file",
      },
    ],
    network: false,
    gpus: 0,
    cpus: 1,
    memoryBytes: 512 * 1024 * 1024,
    pidsLimit: 128,
    walltimeSec: 600,
    env: {},
    labels: { "scifi.run": runId },
    ...overrides,
  };
}
