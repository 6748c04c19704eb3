// Sandbox backends by name (a lazy import map: a backend's engine client loads only when it is used),
// and the process-wide list of live sandboxes that are stopped on SIGINT/SIGTERM and on exit.
import type { SandboxBackend } from "./types.ts";

type BackendFactory = () => Promise<SandboxBackend>;

const backends: Record<string, BackendFactory> = {
  docker: async () => (await import("./docker.ts")).createDockerBackend(),
  apptainer: async () => {
    // Written by the Apptainer helper; the contract is `createApptainerBackend(options?)`.
    const mod = (await import("./apptainer.ts")) as { createApptainerBackend: () => SandboxBackend };
    return mod.createApptainerBackend();
  },
};

/** Names of the registered backends, in a stable order. */
export function backendNames(): string[] {
  return Object.keys(backends).sort();
}

/** The backend called `name`; an unknown name is an error that lists the valid ones. */
export async function getBackend(name: string): Promise<SandboxBackend> {
  const factory = Object.hasOwn(backends, name) ? backends[name] : undefined;
  if (!factory) {
    throw new Error(`unknown sandbox backend '${name}'; valid backends: ${backendNames().join(", ")}`);
  }
  return factory();
}

/** What the process needs to stop one live sandbox. */
export interface LiveSandbox {
  runId: string;
  stop: () => Promise<void>;
  /** Best-effort synchronous cleanup for the process 'exit' event (no async work runs there). */
  stopSync?: () => void;
}

const live = new Set<LiveSandbox>();
let handlersInstalled = false;

/** Registers a started sandbox; call the returned function once it is stopped. */
export function trackLive(sandbox: LiveSandbox): () => void {
  live.add(sandbox);
  installHandlers();
  return () => {
    live.delete(sandbox);
  };
}

/** Run ids of the sandboxes this process has running (prune never removes these). */
export function liveRunIds(): Set<string> {
  return new Set([...live].map((s) => s.runId));
}

/** Stops every live sandbox; errors are collected, not thrown, so one failure does not leak the rest. */
export async function stopAllLive(): Promise<Error[]> {
  const results = await Promise.allSettled([...live].map((s) => s.stop()));
  return results.flatMap((r) => (r.status === "rejected" ? [toError(r.reason)] : []));
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      // Another part of the runner (the daemon, the loop) may own this signal: then it decides when
      // to exit, and we only stop the sandboxes. Otherwise keep the signal's outcome: exit 128 + n.
      // A second signal gets Node's default (immediate exit), so a stuck cleanup can be forced.
      const ownedElsewhere = process.listenerCount(signal) > 0;
      void stopAllLive().finally(() => {
        if (!ownedElsewhere) process.exit(signal === "SIGINT" ? 130 : 143);
      });
    });
  }
  process.once("exit", () => {
    for (const s of live) s.stopSync?.();
  });
}

function toError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason));
}
