// Shared set-up for the inner Apptainer suites: a temporary task folder and a spec for it.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../../../runner/policy/spec.ts";
import { taskFolderSpec } from "../../helpers/spec.ts";

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
  return taskFolderSpec(
    { runId, image: testImage(), taskDir, samFile: true },
    {
      user: { uid: process.getuid?.() ?? 1000, gid: process.getgid?.() ?? 1000 },
      labels: { "scifi.run": runId },
      ...overrides,
    },
  );
}
