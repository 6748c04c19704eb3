// Builders for job tests: SAM metadata and a fresh task folder with its run records folder.
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SamMetadata } from "../../runner/sam/types.ts";
import { plainMetadata } from "../helpers/sam.ts";

export function samMetadata(overrides: Partial<SamMetadata>): SamMetadata {
  return plainMetadata({ jobs: "slurm", walltimeSec: 600, ...overrides });
}

/** A task folder and a records folder beside it (never inside it), under a fresh temp root. */
export async function taskFolders(
  prefix: string,
): Promise<{ root: string; taskDir: string; recordsDir: string }> {
  const root = await mkdtemp(join(tmpdir(), `scifi-${prefix}-`));
  const taskDir = join(root, "task");
  const recordsDir = join(root, "run", "jobs");
  await mkdir(taskDir, { recursive: true });
  await mkdir(recordsDir, { recursive: true });
  return { root, taskDir, recordsDir };
}

export async function writeScript(dir: string, name: string, body: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/bash\n${body}\n`, { mode: 0o755 });
  return path;
}
