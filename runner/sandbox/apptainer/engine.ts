// Running the apptainer binary itself: the environment it gets (never the runner's), one-shot
// subcommands (status, instance list and stop), and the backend's shared context.
import { constants as fsc } from "node:fs";
import { access } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { execa, execaSync } from "execa";
import type { RunProxyOptions } from "../../network/run-proxy.ts";
import * as contract from "../types.ts";

export const BACKEND = "apptainer";

export const INSTALL_FIX =
  "install Apptainer (https://apptainer.org/docs/admin/main/installation.html), or use the harness: bash scripts/apptainer-harness.sh shell";

export interface BackendContext {
  bin: string;
  sifDir: string;
  stateDir: string;
  cgroupLimits: boolean;
  proxy?: RunProxyOptions;
}

/**
 * The environment apptainer is started with: only what it needs to find itself and its state, never
 * the runner's (API keys live there), nor the user's name or temp folder. Apptainer hands what it was
 * started with to the instance's init (its ENGINE_CONFIG), so the less here, the less there.
 * `--cleanenv` additionally keeps the container's environment clean.
 */
export function apptainerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  const keep = ["PATH", "HOME", "XDG_RUNTIME_DIR", "LANG"];
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    const siteConfig = /^(APPTAINER|SINGULARITY)_/.test(key) && !/^(APPTAINER|SINGULARITY)ENV_/.test(key);
    if (keep.includes(key) || siteConfig) env[key] = value;
  }
  return env;
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

/** Runs an apptainer subcommand to completion; a missing binary is SandboxUnavailable. */
export async function runApptainer(
  ctx: BackendContext,
  args: string[],
  timeoutMs = 120_000,
): Promise<RunResult> {
  try {
    const r = await execa(ctx.bin, args, {
      env: apptainerEnv(),
      extendEnv: false,
      cwd: NEUTRAL_CWD,
      reject: false,
      stdin: "ignore",
      timeout: timeoutMs,
    });
    if (r.failed && r.exitCode === undefined) throw r;
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  } catch (err) {
    if (isMissingBinary(err))
      throw new contract.SandboxUnavailable(BACKEND, `'${ctx.bin}' was not found`, INSTALL_FIX);
    throw new contract.SandboxError(`apptainer ${args[0]} failed to run: ${(err as Error).message}`);
  }
}

/**
 * Where apptainer runs: never the runner's folder, which Apptainer would record in the instance's
 * configuration (and which says whose and which home this is).
 */
export const NEUTRAL_CWD = "/";

export function isMissingBinary(err: unknown): boolean {
  return (err as { code?: string }).code === "ENOENT";
}

export async function apptainerStatus(ctx: BackendContext): Promise<contract.BackendStatus> {
  try {
    const r = await runApptainer(ctx, ["--version"], 20_000);
    if (r.exitCode !== 0)
      return { available: false, detail: `apptainer --version failed: ${r.stderr.trim()}`, fix: INSTALL_FIX };
    const sealing = (await findOnPath("perl"))
      ? ""
      : "; no perl on this host: the init's threads and a raw clone3 stay open (docs/apptainer.md)";
    return { available: true, detail: `${r.stdout.trim()} (SIF cache ${ctx.sifDir}${sealing})` };
  } catch (err) {
    if (err instanceof contract.SandboxUnavailable)
      return { available: false, detail: err.message, fix: err.fix };
    return { available: false, detail: (err as Error).message, fix: INSTALL_FIX };
  }
}

export async function findOnPath(binary: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, binary);
    if (
      dir &&
      (await access(candidate, fsc.X_OK).then(
        () => true,
        () => false,
      ))
    )
      return candidate;
  }
  return undefined;
}

export async function listInstances(ctx: BackendContext): Promise<string[]> {
  const r = await runApptainer(ctx, ["instance", "list", "--json"], 30_000);
  if (r.exitCode !== 0) throw new contract.SandboxError(`apptainer instance list failed: ${r.stderr.trim()}`);
  const parsed = JSON.parse(r.stdout || "{}") as { instances?: { instance: string }[] };
  return (parsed.instances ?? []).map((i) => i.instance);
}

/** Idempotent: an instance that is already gone is fine. */
export async function stopInstance(ctx: BackendContext, name: string): Promise<void> {
  const r = await runApptainer(ctx, ["-q", "instance", "stop", "--force", name], 60_000);
  if (r.exitCode === 0 || /no instance found|not found/i.test(r.stderr)) return;
  const still = await listInstances(ctx).catch(() => [name]);
  if (still.includes(name))
    throw new contract.SandboxError(`apptainer instance stop ${name} failed: ${r.stderr.trim()}`);
}

export function stopInstanceSync(ctx: BackendContext, name: string): void {
  try {
    execaSync(ctx.bin, ["-q", "instance", "stop", "--force", name], {
      env: apptainerEnv(),
      extendEnv: false,
      cwd: NEUTRAL_CWD,
      timeout: 10_000,
    });
  } catch {
    // best effort at exit
  }
}
