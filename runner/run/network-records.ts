// The run's side of the proxies' connection records (runner/network/records.ts): a RunExtension
// that puts the connections of the run's own sandboxes on its history tape. Here, not in network/,
// because the extension interface sits above the network layer.
import type { RunExtension } from "../extension/run-extension.ts";
import type { HistoryEvent } from "../memory/history-events.ts";
import { onNetworkRecord } from "../network/records.ts";

/** Puts the connections of the run's sandboxes on its history, one `network` event each. */
export function networkRecordsExtension(runId: string): RunExtension {
  let unsubscribe: (() => void) | undefined;
  return {
    onHistory(append: (event: HistoryEvent) => void) {
      unsubscribe?.();
      unsubscribe = onNetworkRecord((sandbox, r) => {
        if (sandbox.runId === runId) append({ type: "network", sandbox: sandbox.name, ...r });
      });
    },
    async end() {
      unsubscribe?.();
      unsubscribe = undefined;
    },
  };
}
