// What names and labels a scifi container: its name, and the labels that say whose it is (the
// engine keeps them; nothing inside the container sees them), which prune reads back.
import { type SandboxSpec, sandboxName } from "../../policy/spec.ts";
import { currentOwner } from "../core.ts";
import type * as contract from "../types.ts";

/** Container name for a run: `scifi-<runId>` with anything Docker rejects replaced. */
export function containerName(runId: string): string {
  return `scifi-${runId.replace(/[^a-zA-Z0-9_.-]/g, "-")}`;
}

export function sandboxLabels(spec: SandboxSpec): Record<string, string> {
  return {
    ...spec.labels,
    scifi: "1",
    "scifi.run": spec.runId,
    "scifi.sandbox": sandboxName(spec),
    "scifi.backend": "docker",
    ...ownerLabels(currentOwner(spec)),
  };
}

/** The owner as container labels (the engine keeps them; nothing inside the container sees them). */
export function ownerLabels(owner: contract.SandboxOwner): Record<string, string> {
  return {
    "scifi.host": owner.host,
    "scifi.pid": String(owner.pid),
    ...(owner.procStart !== undefined ? { "scifi.procstart": owner.procStart } : {}),
    ...(owner.home !== undefined ? { "scifi.home": owner.home } : {}),
  };
}

export function ownerFromLabels(labels: Record<string, string>): Partial<contract.SandboxOwner> {
  return {
    host: labels["scifi.host"],
    pid: Number(labels["scifi.pid"]),
    procStart: labels["scifi.procstart"],
    home: labels["scifi.home"],
  };
}
