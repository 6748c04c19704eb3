// The run's side of the proxies' connection records (runner/network/records.ts): a RunExtension
// that puts the connections of the run's own sandboxes on its history tape, within the run's quota
// for them. Here, not in network/, because the extension interface sits above the network layer.
import type { IntegrityNotice, RunExtension } from "../../extension/run-extension.ts";
import type { ConnectionRecord, HistoryEvent } from "../../memory/history-events.ts";
import { REFUSALS_NOT_RECORDED } from "../../network/limits.ts";
import { onNetworkRecord, stopAllowingForRun } from "../../network/records.ts";

/** `network` events a run's history takes from all its sandboxes together, and their bytes. */
export const RUN_NETWORK_QUOTA = { events: 20_000, bytes: 16 * 1024 * 1024 };

/**
 * Puts the connections of the run's sandboxes on its history, one `network` event each, within the
 * run's quota for them (each sandbox's proxy caps its own records first, runner/network/limits.ts);
 * past the quota, one `flood` event, nothing more on the history, and the run's proxies (running and
 * later ones) make no new connection, since it could not be recorded.
 */
export function networkRecordsExtension(runId: string, quota = RUN_NETWORK_QUOTA): RunExtension {
  let unsubscribe: (() => void) | undefined;
  let events = 0;
  let bytes = 0;
  let flooded = false;
  let integrity: ((notice: IntegrityNotice) => void) | undefined;
  return {
    onIntegrity(record) {
      integrity = record;
    },
    onHistory(append: (event: HistoryEvent) => void) {
      unsubscribe?.();
      unsubscribe = onNetworkRecord((sandbox, r) => {
        if (sandbox.runId !== runId) return;
        // A refused name lookup is not counted: programs resolve names they then reach through the
        // proxy (docs/integrity.md); the connection that follows is the attempt. Before the quota:
        // a refusal after the flood is still an integrity event (the integrity quota bounds them).
        if (r.rule === REFUSALS_NOT_RECORDED) integrity?.(notRecorded(sandbox.name, r));
        else if (!r.allowed && r.kind !== "dns") integrity?.(refusedConnection(r));
        if (flooded) return;
        const event: HistoryEvent = { type: "network", sandbox: sandbox.name, ...r };
        const size = JSON.stringify(event).length + 1;
        if (events < quota.events && bytes + size <= quota.bytes) {
          events++;
          bytes += size;
          append(event);
          return;
        }
        flooded = true;
        stopAllowingForRun(
          runId,
          `the run's network records quota (${quota.events} records, ${quota.bytes} bytes)`,
        );
        append({
          type: "network",
          sandbox: sandbox.name,
          time: new Date().toISOString(),
          kind: r.kind,
          host: "-",
          port: 0,
          allowed: false,
          rule: "flood",
          reason: `the run's history holds at most ${quota.events} network records (${quota.bytes} bytes) from all its sandboxes together: the run's sandboxes make no new connection from now on, and later refusals are integrity events only`,
          bytesOut: 0,
          bytesIn: 0,
          durationMs: 0,
        });
      });
    },
    async end() {
      unsubscribe?.();
      unsubscribe = undefined;
      stopAllowingForRun(runId, undefined);
    },
  };
}

/** A refused connection as an integrity notice (the run adds the role and the tool call). */
function refusedConnection(r: ConnectionRecord): IntegrityNotice {
  return {
    kind: "network_refused",
    attempted: `a ${r.kind} connection to ${JSON.stringify(r.host)} port ${r.port}`,
    rule: `network rule ${JSON.stringify(r.rule)}${r.reason ? `: ${r.reason}` : ""}`,
    action: "refused by the run's proxy",
  };
}

/** A sandbox's refusals its record caps left out, as one `overflow` notice: the count is a lower bound. */
function notRecorded(sandbox: string, r: ConnectionRecord): IntegrityNotice {
  return {
    kind: "overflow",
    attempted: `sandbox ${sandbox}: ${r.reason ?? "more refused connections than its records take"}`,
    rule: "each sandbox's proxy keeps at most 500 records of refused connections and 500 of captured ones (runner/network/limits.ts)",
    action: "refused; not one integrity event each (the run's count of network_refused is a lower bound)",
  };
}
