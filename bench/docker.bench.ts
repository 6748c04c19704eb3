// Docker backend overhead, each against the raw Engine API measured in the same run on the same engine:
// - per exec: sandbox.exec(["true"]) vs a raw dockerode exec (create, start, demux, inspect) on the
//   SAME container (target ratio <= 1.10);
// - start: backend.start(spec) vs a raw createContainer + start with the same options (target <= 1.15).
// Rounds are interleaved so engine warm-up and machine load hit both sides alike; medians are reported.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import Docker from "dockerode";
import type { SandboxSpec } from "../runner/policy/spec.ts";
import { containerOptions, createDockerBackend } from "../runner/sandbox/docker.ts";
import type { BenchResult } from "../scripts/bench.ts";
import { taskFolderSpec } from "../test/helpers/spec.ts";
import { scaled } from "./size.ts";

const IMAGE = "scifi-base:bookworm";
const EXEC_ROUNDS = scaled(40, 3);
const START_ROUNDS = scaled(8, 1);

export async function run(): Promise<BenchResult[]> {
  execFileSync("bash", [join(import.meta.dirname, "..", "scripts", "build-image.sh"), "--base-only"], {
    stdio: "ignore",
  });
  const docker = new Docker();
  const backend = createDockerBackend({ docker });
  const taskDir = mkdtempSync(join(tmpdir(), "scifi-bench-"));
  try {
    const exec = await measureExec(docker, backend, taskDir);
    const start = await measureStart(docker, backend, taskDir);
    return [
      {
        name: "docker exec overhead (median per exec of `true`)",
        value: exec.backend,
        unit: "ms",
        baseline: exec.raw,
        maxRatio: 1.1,
        note: `${EXEC_ROUNDS} interleaved rounds; baseline: raw dockerode exec on the same container`,
      },
      {
        name: "docker sandbox start (median)",
        value: start.backend,
        unit: "ms",
        baseline: start.raw,
        maxRatio: 1.15,
        note: `${START_ROUNDS} interleaved rounds; baseline: raw createContainer + start, same options`,
      },
    ];
  } finally {
    rmSync(taskDir, { recursive: true, force: true });
  }
}

function benchSpec(taskDir: string, runId: string): SandboxSpec {
  return taskFolderSpec({ runId, image: IMAGE, taskDir }, { pidsLimit: 256, labels: { "scifi.bench": "1" } });
}

async function measureExec(docker: Docker, backend: ReturnType<typeof createDockerBackend>, taskDir: string) {
  const sandbox = await backend.start(benchSpec(taskDir, `bench-exec-${process.pid}`));
  try {
    const container = docker.getContainer(`scifi-bench-exec-${process.pid}`);
    const raw: number[] = [];
    const ours: number[] = [];
    for (let i = 0; i < 3; i++) {
      await rawExec(docker, container);
      await sandbox.exec(["true"]);
    }
    for (let i = 0; i < EXEC_ROUNDS; i++) {
      raw.push(await timed(() => rawExec(docker, container)));
      ours.push(await timed(() => sandbox.exec(["true"])));
    }
    return { raw: median(raw), backend: median(ours) };
  } finally {
    await sandbox.stop();
  }
}

/** The least a caller of the Engine API must do to run a command and learn its exit code. */
async function rawExec(docker: Docker, container: Docker.Container): Promise<number> {
  const exec = await container.exec({ Cmd: ["true"], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({ hijack: true, stdin: false });
  docker.modem.demuxStream(stream, new PassThrough(), new PassThrough());
  await new Promise<void>((done) => {
    stream.once("end", done);
    stream.once("close", done);
  });
  const info = await exec.inspect();
  return info.ExitCode ?? -1;
}

async function measureStart(
  docker: Docker,
  backend: ReturnType<typeof createDockerBackend>,
  taskDir: string,
) {
  const raw: number[] = [];
  const ours: number[] = [];
  for (let i = 0; i < START_ROUNDS; i++) {
    const rawSpec = benchSpec(taskDir, `bench-raw-${process.pid}-${i}`);
    let container: Docker.Container | undefined;
    raw.push(
      await timed(async () => {
        container = await docker.createContainer(containerOptions(rawSpec));
        await container.start();
      }),
    );
    await container?.remove({ force: true });
    let stop: (() => Promise<void>) | undefined;
    ours.push(
      await timed(async () => {
        const sandbox = await backend.start(benchSpec(taskDir, `bench-start-${process.pid}-${i}`));
        stop = () => sandbox.stop();
      }),
    );
    await stop?.();
  }
  return { raw: median(raw), backend: median(ours) };
}

async function timed(action: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await action();
  return performance.now() - t0;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}
