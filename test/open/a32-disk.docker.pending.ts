// Attack round 32: the host disk the agent can fill past the task-folder quota, and the modes a
// lending leaves behind, through a real Docker sandbox. Each test asserts the secure behaviour and
// fails today (see the report of branch attack32):
// - A32-1 a file unlinked while open in /task holds its blocks on the host's file system, where no
//   walk of the task folder sees them: 64 MiB against an 8 MiB quota, no QuotaExceeded;
// - A32-2 the container's pid 1 (docker-init, the sandbox's own uid) has its stdout on a pipe to
//   the engine's json-file log with no size limit: whatever the agent writes to /proc/1/fd/1 lands
//   in /var/lib/docker/containers/<id>/<id>-json.log on the host, outside every quota;
// - A32-3 (root) a FIFO and a unix socket the agent made during the run keep their 0666 / 0777
//   after the give back, now owned by root (docs/sandbox.md: entries made during the run lose group
//   and other write).
// - A32-7 one fallocate call allocates 1 GiB in a millisecond against an 8 MiB quota: the call is
//   refused afterwards, but the overshoot is not "what it writes in about a second" of a writer
//   (docs/sandbox.md): it is whatever one call asks for, up to the host's free space, and it stays.
import { spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { SandboxSpec } from "../../runner/policy/spec.ts";
import { containerName, createDockerBackend } from "../../runner/sandbox/docker.ts";
import { QuotaExceeded, type Sandbox } from "../../runner/sandbox/types.ts";
import { hasEngine } from "../helpers/engines.ts";
import { taskFolderSpec } from "../helpers/spec.ts";
import { ensureImage, IMAGE } from "../loop/harness.ts";

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

  it("A32-1 a file unlinked while open in /task counts against the quota: 64 MiB against 8 MiB is refused", async () => {
    const task = folder();
    const sb = await start(task, `a32-1-${process.pid}-${Date.now()}`, {
      taskFolderQuota: { maxAddBytes: 8 * MiB },
    });
    try {
      // The control: the same allocation in a file that stays is refused.
      await expect(
        sb.exec(
          `python3 -c "import os; f=os.open('/task/kept', os.O_CREAT|os.O_RDWR); os.posix_fallocate(f,0,64<<20)"`,
        ),
      ).rejects.toThrow(QuotaExceeded);
      await sb.exec("rm -f /task/kept");
      // The attack: unlinked first, then 64 MiB allocated; the blocks are on the host's disk until
      // the process ends (a background holder keeps them for the rest of the run).
      await expect(
        sb.exec(
          `python3 -c "import os; f=os.open('/task/big', os.O_CREAT|os.O_RDWR); os.unlink('/task/big'); os.posix_fallocate(f,0,64<<20); print('held', os.fstat(f).st_blocks*512)"`,
        ),
      ).rejects.toThrow(QuotaExceeded);
    } finally {
      await sb.stop();
    }
  }, 120_000);

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

  it("A32-7 one fallocate call does not take the host's disk far past the quota", async () => {
    const task = folder();
    const sb = await start(task, `a32-7-${process.pid}-${Date.now()}`, {
      taskFolderQuota: { maxAddBytes: 8 * MiB },
    });
    let allocated = 0;
    try {
      await expect(sb.exec("fallocate -l 1G big; echo ALLOCATED")).rejects.toThrow(QuotaExceeded);
      allocated = lstatSync(join(task, "big"), { throwIfNoEntry: false })?.blocks ?? 0;
    } finally {
      await sb.exec("rm -f big").catch(() => undefined);
      await sb.stop();
    }
    console.log(`A32-7: left allocated after the refused call: ${(allocated * 512) / MiB} MiB (quota 8 MiB)`);
    expect(allocated * 512, "the overshoot of one call").toBeLessThan(64 * MiB);
  }, 120_000);
});
