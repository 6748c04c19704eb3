// Every run proxy's connection records, as they happen, to whoever listens: the run's history (a
// RunExtension, runner/run/network-records.ts) picks those of its own sandboxes by sandbox run id.
import type { ConnectionRecord } from "../memory/history-events.ts";
import type { NetworkProxy } from "./proxy.ts";

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

export function registerRunProxy(sandboxRunId: string, proxy: NetworkProxy): () => void {
  live.set(sandboxRunId, proxy);
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
