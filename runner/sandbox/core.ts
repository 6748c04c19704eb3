// The part of a sandbox every backend shares, so that Docker and Apptainer cannot drift apart:
// - file access: task-folder files on the host through policy/host-paths.ts (no link followed, no
//   hard-linked twin clobbered), every other path through a capped command inside the container;
// - the exec result, built from the capped streams of output.ts;
// - owners and prune: who started a sandbox (host, pid, process start time, scifi home), and
//   whether a prune may stop it (only this home's, only when its owner is gone).
import { realpathSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { ownerAlive, processStart } from "../pid-lock.ts";
import {
  HostPathRefused,
  MAX_READ_BYTES,
  readTaskFile,
  routePath,
  writeTaskFile,
} from "../policy/host-paths.ts";
import type { SandboxSpec } from "../policy/spec.ts";
import { liveRunIds } from "./live.ts";
import type { CappedBuffer } from "./output.ts";
import * as contract from "./types.ts";

/** What a write through the container may print (its errors): small. */
const WRITE_OUTPUT_BYTES = 64 * 1024;

/** One command run inside the sandbox on behalf of the runner, with its capped streams. */
export interface InsideResult {
  exitCode: number;
  stdout: CappedBuffer;
  stderr: CappedBuffer;
}

/** How a backend runs a runner command inside its sandbox (cwd `/`, no extra environment). */
export type InsideRun = (
  argv: string[],
  options: { stdin?: string | Buffer; maxBytes: number },
) => Promise<InsideResult>;

/** Sandbox.readFile for any backend. */
export async function readSandboxFile(spec: SandboxSpec, path: string, inside: InsideRun): Promise<Buffer> {
  const route = routePath(spec, path);
  if (route.where === "task") return hostSide(() => readTaskFile(spec.taskDir, route.rel, path));
  // Outside the task folder the file is the container's: read it there, as the sandbox's user, so
  // any link it follows stays inside the container and its permissions hold.
  const raw = await inside(insideReadArgv(path, route.path), { maxBytes: MAX_READ_BYTES });
  if (raw.exitCode !== 0) throw new contract.SandboxError(`readFile ${path}: ${errorText(raw)}`);
  if (raw.stdout.truncated) {
    throw new contract.PathRefused(
      path,
      `the file is larger than ${MAX_READ_BYTES} bytes, the most one read returns; read a part of it with a command (head, tail, sed -n)`,
    );
  }
  return raw.stdout.bytes();
}

/**
 * The command that reads a container file for the runner: a regular file only (no FIFO, socket or
 * device can stall it), at most MAX_READ_BYTES + 1 bytes (one more says "too big"); kernel
 * pseudo-files and devices (/proc, /sys, /dev) are refused before anything runs. Every backend uses it.
 */
export function insideReadArgv(shown: string, containerPath: string): string[] {
  if (/^\/(proc|sys|dev)(\/|$)/.test(containerPath)) {
    throw new contract.PathRefused(
      shown,
      "a kernel pseudo-file or device is never read as a file; use a command",
    );
  }
  const script = `[ -f "$1" ] || { echo "$1: not a regular file (or missing)" >&2; exit 3; }; exec head -c ${MAX_READ_BYTES + 1} -- "$1"`;
  return ["sh", "-c", script, "scifi-read", containerPath];
}

/** Sandbox.writeFile for any backend; writes under a read-only mount are refused before anything runs. */
export async function writeSandboxFile(
  spec: SandboxSpec,
  path: string,
  data: string | Buffer,
  inside: InsideRun,
): Promise<void> {
  const route = routePath(spec, path);
  if (route.where === "task") {
    // A root runner writes for the sandbox's unprivileged user, so the sandbox can change it later.
    const owner = process.getuid?.() === 0 ? spec.user : undefined;
    return hostSide(() => writeTaskFile(spec.taskDir, route.rel, data, path, owner));
  }
  if (route.readOnly) throw new contract.PathRefused(path, "it lies in a read-only mount");
  const script = 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"';
  const raw = await inside(["sh", "-c", script, "scifi-write", route.path], {
    stdin: data,
    maxBytes: WRITE_OUTPUT_BYTES,
  });
  if (raw.exitCode !== 0) throw new contract.SandboxError(`writeFile ${path}: ${errorText(raw)}`);
}

/** Host-side refusals become the sandbox contract's PathRefused. */
export function hostSide<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    if (error instanceof HostPathRefused) throw new contract.PathRefused(error.path, error.reason);
    throw error;
  }
}

function errorText(raw: InsideResult): string {
  return raw.stderr.bytes().toString("utf8").trim();
}

/** The ExecResult of one exec: the capped texts (with the truncation marker) and the verdicts. */
export function execResult(raw: InsideResult, timedOut: boolean, durationMs: number): contract.ExecResult {
  return {
    exitCode: raw.exitCode,
    stdout: raw.stdout.text(),
    stderr: raw.stderr.text(),
    timedOut,
    truncated: raw.stdout.truncated || raw.stderr.truncated,
    durationMs,
  };
}

// ---------------------------------------------------------------------------------------------
// Owners and prune

/** A home as owner records name it: absolute, links resolved where it exists. */
export function homeKey(home: string): string {
  const absolute = resolve(home);
  try {
    return realpathSync(absolute);
  } catch {
    return absolute;
  }
}

/** This process as the owner of a sandbox started for `spec`. */
export function currentOwner(spec: Pick<SandboxSpec, "home">): contract.SandboxOwner {
  const procStart = processStart(process.pid);
  return {
    host: hostname(),
    pid: process.pid,
    ...(procStart !== undefined ? { procStart } : {}),
    ...(spec.home !== undefined ? { home: homeKey(spec.home) } : {}),
  };
}

/**
 * Whether a prune of `scope` may stop the sandbox of `runId` owned by `owner`: only when the owner
 * is known, belongs to this home, ran on this host and is gone (dead, or its pid now belongs to a
 * process that started at another time), and the run is not live here or in `scope.liveRunIds`.
 */
export function mayPrune(
  runId: string,
  owner: Partial<contract.SandboxOwner> | undefined,
  scope: contract.PruneScope,
): boolean {
  if (scope.liveRunIds?.has(runId) || liveRunIds().has(runId)) return false;
  if (!owner?.home || !owner.host || !Number.isInteger(owner.pid) || (owner.pid ?? 0) <= 0) return false;
  if (owner.home !== homeKey(scope.home)) return false;
  if (owner.host !== hostname()) return false; // its pid cannot be checked from here
  const pid = owner.pid as number;
  return !ownerAlive({
    pid,
    host: owner.host,
    startedAt: "",
    ...(owner.procStart ? { procStart: owner.procStart } : {}),
  });
}
