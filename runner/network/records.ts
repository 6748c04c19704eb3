// Every run proxy's connection records, as they happen, to whoever listens: the run's history (a
// RunExtension from runner/loop/setup.ts) picks those of its own sandboxes by sandbox run id.
import type { HistoryEvent } from "../memory/history.ts";
import type { RunExtension } from "../tools/extension.ts";
import type { ConnectionRecord } from "./proxy.ts";

type Listener = (sandboxRunId: string, record: ConnectionRecord) => void;
const listeners = new Set<Listener>();

/** Subscribes to every record; returns the unsubscribe. */
export function onNetworkRecord(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function emitNetworkRecord(sandboxRunId: string, record: ConnectionRecord): void {
  for (const listener of listeners) {
    try {
      listener(sandboxRunId, record);
    } catch {
      // a listener's failure never touches the proxy
    }
  }
}

/** Whether a sandbox (named `<run>[-rN]-<phase><iteration>` by the loop) belongs to run `runId`. */
export function sandboxOfRun(sandboxRunId: string, runId: string): boolean {
  if (!sandboxRunId.startsWith(`${runId}-`)) return false;
  return /^(r\d+-)?[a-z-]+\d*$/.test(sandboxRunId.slice(runId.length + 1));
}

/** Puts the connections of the run's sandboxes on its history, one `network` event each. */
export function networkRecordsExtension(runId: string): RunExtension {
  let unsubscribe: (() => void) | undefined;
  return {
    onHistory(append: (event: HistoryEvent) => void) {
      unsubscribe?.();
      unsubscribe = onNetworkRecord((sandbox, r) => {
        if (sandboxOfRun(sandbox, runId)) append({ type: "network", sandbox, ...r });
      });
    },
    async end() {
      unsubscribe?.();
      unsubscribe = undefined;
    },
  };
}
