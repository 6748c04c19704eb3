// Sandbox backends by name (a lazy import map: a backend's engine client loads only when it is used).
// What is live in this process, and the signal policy that stops it, is runner/sandbox/live.ts.
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
