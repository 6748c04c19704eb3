// Found by an attacker (round 32) of the host disk and the lending, kept as tests:
// - A32-2 what the agent writes to pid 1's stdout went to Docker's json-file log on the host disk,
//   with no size limit and outside the task folder's quota: the sandbox now logs nothing.
// - A32-3 (root) a FIFO and a unix socket the agent made during the run kept their 0666 / 0777
//   after the give back, now owned by root (docs/sandbox.md: entries made during the run lose group
//   and other write).
import { spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { containerName, createDockerBackend } from "../../runner/sandbox/docker.ts";
import type { Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ensureImage, IMAGE } from "../run/harness.ts";

const isRoot = process.getuid?.() === 0;
const MiB = 1024 ** 2;

function folder(): string {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "scifi-a32-")));
  chmodSync(base, 0o755);
  const task = join(base, "task");
  mkdirSync(task);
  writeFileSync(join(task, "task.md"), "x\n");
  return task;
}

async function start(task: string, runId: string, overrides: Partial<SandboxSpec> = {}): Promise<Sandbox> {
  const spec = taskFolderSpec(
    { runId, image: IMAGE, taskDir: task },
    { labels: { "scifi.test": "attack32" }, ...overrides },
  );
  return createDockerBackend().start(spec);
}

describe.skipIf(!hasEngine("docker"))("A32: the host disk and the lending (docker)", () => {
  beforeAll(() => ensureImage(), 1_800_000);

  it("A32-2 what the agent writes to pid 1's stdout does not grow a host file past the quota", async () => {
    const task = folder();
    const runId = `a32-2-${process.pid}-${Date.now()}`;
    const sb = await start(task, runId, { taskFolderQuota: { maxAddBytes: 8 * MiB } });
    let logBytes = 0;
    try {
      const r = await sb.exec("head -c 33554432 /dev/zero | tr '\\0' A > /proc/1/fd/1; echo DONE");
      expect(r.stdout).toContain("DONE");
      const logPath = spawnSync("docker", ["inspect", "-f", "{{.LogPath}}", containerName(runId)], {
        encoding: "utf8",
      }).stdout.trim();
      logBytes = logPath ? statSync(logPath).size : 0;
    } finally {
      await sb.stop();
    }
    console.log(`A32-2: the container's log on the host after 32 MiB to /proc/1/fd/1: ${logBytes} bytes`);
    expect(logBytes).toBeLessThan(8 * MiB);
  }, 120_000);

  it.runIf(isRoot)(
    "A32-3 a FIFO and a socket made during the run lose group and other write at the give back",
    async () => {
      const task = folder();
      const sb = await start(task, `a32-3-${process.pid}-${Date.now()}`);
      try {
        const r = await sb.exec(
          `mkfifo fifo && chmod 0666 fifo && python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')" && chmod 0777 sock && echo MADE`,
        );
        expect(r.stdout, r.stderr).toContain("MADE");
      } finally {
        await sb.stop();
      }
      for (const name of ["fifo", "sock"]) {
        const st = lstatSync(join(task, name));
        expect(st.uid, name).toBe(0);
        expect((st.mode & 0o022).toString(8), `${name} keeps group/other write`).toBe("0");
      }
    },
    120_000,
  );
});
