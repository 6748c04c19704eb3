// Every run proxy's connection records, as they happen, to whoever listens: the run's history (a
// RunExtension from runner/loop/setup.ts) picks those of its own sandboxes by sandbox run id.
import type { HistoryEvent } from "../memory/history.ts";
import type { RunExtension } from "../tools/extension.ts";
import type { ConnectionRecord, NetworkProxy } from "./proxy.ts";

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

type Advisor = (sandboxRunId: string, host: string, port: number) => string | undefined;
const advisors = new Set<Advisor>();

/**
 * Subscribes to names refused as not on the list (the runtime network approval files a request
 * there); what an advisor returns is added to the reason the sandbox reads. Returns the unsubscribe.
 */
export function onNotListedHost(advisor: Advisor): () => void {
  advisors.add(advisor);
  return () => advisors.delete(advisor);
}

export function adviseNotListed(sandboxRunId: string, host: string, port: number): string | undefined {
  for (const advisor of advisors) {
    try {
      const text = advisor(sandboxRunId, host, port);
      if (text) return text;
    } catch {
      // an advisor's failure never touches the proxy
    }
  }
  return undefined;
}

/** The proxies running now, by the sandbox run id they serve. */
const live = new Map<string, NetworkProxy>();

/** Runs whose history took all the network records it may (why, by run id): their proxies allow nothing new. */
const spent = new Map<string, string>();

export function registerRunProxy(sandboxRunId: string, proxy: NetworkProxy): () => void {
  live.set(sandboxRunId, proxy);
  for (const [runId, why] of spent) if (sandboxOfRun(sandboxRunId, runId)) proxy.stopAllowing(why);
  return () => {
    if (live.get(sandboxRunId) === proxy) live.delete(sandboxRunId);
  };
}

/** Adds an allow rule to every running proxy of run `runId` (an approved host); how many got it. */
export function allowOnRunProxies(runId: string, rule: string): number {
  let n = 0;
  for (const [sandbox, proxy] of live) {
    if (!sandboxOfRun(sandbox, runId)) continue;
    proxy.rules.addAllow(rule);
    n++;
  }
  return n;
}

/** Whether a sandbox (named `<run>[-rN]-<phase><iteration>` by the loop) belongs to run `runId`. */
export function sandboxOfRun(sandboxRunId: string, runId: string): boolean {
  if (!sandboxRunId.startsWith(`${runId}-`)) return false;
  return /^(r\d+-)?[a-z-]+\d*$/.test(sandboxRunId.slice(runId.length + 1));
}

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
  return {
    onHistory(append: (event: HistoryEvent) => void) {
      unsubscribe?.();
      unsubscribe = onNetworkRecord((sandbox, r) => {
        if (!sandboxOfRun(sandbox, runId) || flooded) return;
        const event: HistoryEvent = { type: "network", sandbox, ...r };
        const size = JSON.stringify(event).length + 1;
        if (events < quota.events && bytes + size <= quota.bytes) {
          events++;
          bytes += size;
          append(event);
          return;
        }
        flooded = true;
        const why = `the run's network records quota (${quota.events} records, ${quota.bytes} bytes)`;
        spent.set(runId, why);
        for (const [id, proxy] of live) if (sandboxOfRun(id, runId)) proxy.stopAllowing(why);
        append({
          type: "network",
          sandbox,
          time: new Date().toISOString(),
          kind: r.kind,
          host: "-",
          port: 0,
          allowed: false,
          rule: "flood",
          reason: `the run's history holds at most ${quota.events} network records (${quota.bytes} bytes) from all its sandboxes together: the run's sandboxes make no new connection from now on, and refusals are not recorded`,
          bytesOut: 0,
          bytesIn: 0,
          durationMs: 0,
        });
      });
    },
    async end() {
      unsubscribe?.();
      unsubscribe = undefined;
      spent.delete(runId);
    },
  };
}
