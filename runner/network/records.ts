// Every run proxy's connection records, as they happen, to whoever listens: the run's history (a
// RunExtension, runner/run/session/network-records.ts) picks those of its own sandboxes by their run id,
// which each proxy carries as data (SandboxSpec.runId), never read back from a sandbox's name.
import type { ConnectionRecord } from "../memory/history-events.ts";
import type { NetworkProxy } from "./proxy.ts";

/** The sandbox a run proxy serves: its run, and its name (policy/spec.ts sandboxName) for the records. */
export interface ProxiedSandbox {
  runId: string;
  name: string;
}

type Listener = (sandbox: ProxiedSandbox, record: ConnectionRecord) => void;
const listeners = new Set<Listener>();

/** Subscribes to every record; returns the unsubscribe. */
export function onNetworkRecord(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function emitNetworkRecord(sandbox: ProxiedSandbox, record: ConnectionRecord): void {
  for (const listener of listeners) {
    try {
      listener(sandbox, record);
    } catch {
      // a listener's failure never touches the proxy
    }
  }
}

type Advisor = (sandbox: ProxiedSandbox, host: string, port: number) => string | undefined;
const advisors = new Set<Advisor>();

/**
 * Subscribes to names refused as not on the list (the runtime network approval files a request
 * there); what an advisor returns is added to the reason the sandbox reads. Returns the unsubscribe.
 */
export function onNotListedHost(advisor: Advisor): () => void {
  advisors.add(advisor);
  return () => advisors.delete(advisor);
}

export function adviseNotListed(sandbox: ProxiedSandbox, host: string, port: number): string | undefined {
  for (const advisor of advisors) {
    try {
      const text = advisor(sandbox, host, port);
      if (text) return text;
    } catch {
      // an advisor's failure never touches the proxy
    }
  }
  return undefined;
}

/** The proxies running now, with the sandbox each serves. */
const live = new Map<NetworkProxy, ProxiedSandbox>();

/** Runs whose history took all the network records it may (why, by run id): their proxies allow nothing new. */
const spent = new Map<string, string>();

export function registerRunProxy(sandbox: ProxiedSandbox, proxy: NetworkProxy): () => void {
  live.set(proxy, sandbox);
  const why = spent.get(sandbox.runId);
  if (why) proxy.stopAllowing(why);
  return () => {
    live.delete(proxy);
  };
}

/**
 * The run's history took all the network records it may: every proxy of the run, running or
 * started later, makes no new connection (it could not be recorded). `undefined`: the run ended.
 */
export function stopAllowingForRun(runId: string, why: string | undefined): void {
  if (why === undefined) {
    spent.delete(runId);
    return;
  }
  spent.set(runId, why);
  for (const [proxy, sandbox] of live) if (sandbox.runId === runId) proxy.stopAllowing(why);
}

/** Adds an allow rule to every running proxy of run `runId` (an approved host); how many got it. */
export function allowOnRunProxies(runId: string, rule: string): number {
  let n = 0;
  for (const [proxy, sandbox] of live) {
    if (sandbox.runId !== runId) continue;
    proxy.rules.addAllow(rule);
    n++;
  }
  return n;
}
