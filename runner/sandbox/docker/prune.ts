// Owners as container labels, and the prune of this home's containers whose owner is gone.

import type Docker from "dockerode";
import { mayPrune } from "../core.ts";
import type * as contract from "../types.ts";
import { bridgeName, dropHostInput } from "./host-input.ts";
import { ownerFromLabels } from "./labels.ts";

/** Removes containers of `scope.home` whose owner is gone (core.ts mayPrune decides). */
export async function pruneContainers(docker: Docker, scope: contract.PruneScope): Promise<string[]> {
  const containers = await docker.listContainers({ all: true, filters: { label: ["scifi=1"] } });
  const removed: string[] = [];
  for (const info of containers) {
    const runId = info.Labels["scifi.run"] ?? "";
    if (!mayPrune(runId, ownerFromLabels(info.Labels), scope)) continue;
    await docker
      .getContainer(info.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
    removed.push(`${info.Names[0]?.replace(/^\//, "") ?? info.Id} (run ${runId})`);
  }
  // The runs' own networks (`network: true`), once their containers are gone.
  const networks = await docker.listNetworks({ filters: { label: ["scifi=1"] } }).catch(() => []);
  for (const info of networks) {
    const labels = info.Labels ?? {};
    const runId = labels["scifi.run"] ?? "";
    if (!mayPrune(runId, ownerFromLabels(labels), scope)) continue;
    // A runner killed hard left its host-side refusal of the bridge too (host-input.ts).
    dropHostInput(bridgeName(info.Name));
    await docker
      .getNetwork(info.Id)
      .remove()
      .catch(() => undefined);
    removed.push(`network ${info.Name} (run ${runId})`);
  }
  return removed;
}
