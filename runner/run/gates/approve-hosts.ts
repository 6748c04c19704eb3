// Approving a host at run time (`network` in `approval:` and a host list in the SAM): when the run's
// proxy refuses a name as not on the list, a request is filed with the approval gate without
// waiting (the connection is refused now; the reason the sandbox reads names the request and says
// to retry after approval). Once a person approves it (`scifi approve`, from any process: the
// approvals file is polled), the host is added to the run's running proxies and to the host list of
// every later sandbox of the run (the loop asks `networkAllow` at each start); a resumed run derives
// the approved hosts from approvals.jsonl again. Only a host the site policy would let a SAM list
// can be asked for (its `allowedHosts` cover it, its `deniedHosts` do not); one request per
// host:port per run, at most a few pending at once and a few dozen in all. The request, the decision (gate) and the
// first connection through the host are on the history and the audit tape.
import type { ApprovalGate } from "../../approval/gate.ts";
import { type ApprovalView, runApprovals } from "../../approval/store.ts";
import type { RunExtension } from "../../extension/run-extension.ts";
import type { HistoryEvent } from "../../memory/history-events.ts";
import {
  allowOnRunProxies,
  onNetworkRecord,
  onNotListedHost,
  type ProxiedSandbox,
} from "../../network/records.ts";
import { Rules } from "../../network/rules.ts";
import { allowedHostsCover } from "../../policy/resolve.ts";
import type { SitePolicy } from "../../policy/site.ts";
import { parseHostRule } from "../../sam/host-rules.ts";

/** Requests for hosts pending at once, per run; past it nothing more is filed until some are decided. */
export const MAX_PENDING_HOST_REQUESTS = 5;

/** Requests for hosts a run files in all (decided ones included); past it nothing more is asked. */
export const MAX_HOST_REQUESTS = 20;

/** How often a refusal of a pending host may look at the approvals file for its decision. */
const ADVISE_SETTLE_MS = 200;

/** `facts.kind` of a request for a host (how a resumed run finds its requests in approvals.jsonl). */
export const HOST_REQUEST_KIND = "network-host";

export interface HostApprovalOptions {
  home: string;
  runId: string;
  /** The task's name, for the request's summary. */
  task: string;
  /** The SAM's host list (shown in the request). */
  listed: readonly string[];
  site: Pick<SitePolicy, "allowedHosts" | "deniedHosts">;
  gate: Pick<ApprovalGate, "file" | "takeUp">;
  /** How often pending requests are looked at (default 500 ms). */
  pollMs?: number;
  maxPending?: number;
  maxRequests?: number;
}

/** The site's deny rules, parsed once per site policy object (a refusal flood asks for them each time). */
const siteDenyRules = new WeakMap<object, Rules>();

/** Whether the site policy would let a SAM list `host:port`: its rule, or why not. */
export function siteAllowsHost(
  site: Pick<SitePolicy, "allowedHosts" | "deniedHosts">,
  host: string,
  port: number,
): { ok: true; rule: string } | { ok: false; why: string } {
  const text = `${host}:${port}`;
  const rule = parseHostRule(text);
  if (!rule || rule.wildcard) return { ok: false, why: `${text} is not a host name a SAM can list` };
  if (!allowedHostsCover(site.allowedHosts, rule))
    return {
      ok: false,
      why: `the site policy's allowedHosts (${site.allowedHosts.join(", ") || "none"}) do not include ${text}`,
    };
  let deny = siteDenyRules.get(site);
  if (!deny) {
    deny = new Rules({ allow: [], deny: [...site.deniedHosts], allowedPrivateRanges: [] });
    siteDenyRules.set(site, deny);
  }
  const denied = deny.check(host, port);
  if (!denied.allowed && denied.rule.startsWith("deny "))
    return { ok: false, why: `the site policy denies ${text} (${denied.rule.slice(5)})` };
  return { ok: true, rule: rule.text };
}

interface HostRequest {
  id: string;
  rule: string;
  state: "pending" | "approved" | "denied" | "timed_out" | "withdrawn";
  who?: string;
  note?: string;
}

function isHostRequest(view: ApprovalView): boolean {
  return view.request.action === "network" && view.request.facts.kind === HOST_REQUEST_KIND;
}

export interface HostApprovals extends RunExtension {
  /** Rules approved so far (`host:port`), in approval order. */
  approved(): string[];
  /** What the proxy adds to a not-listed refusal (exposed for tests; the proxy calls it through records.ts). */
  advise(sandbox: ProxiedSandbox, host: string, port: number): string | undefined;
  /** Takes up decisions now (the poller does this every `pollMs`). */
  poll(): void;
}

/**
 * The extension of a run whose SAM lists hosts and whose gate requires `network`. Built on every
 * start and resume; what was asked and decided before comes from the run's approvals.jsonl.
 */
export function hostApprovalExtension(o: HostApprovalOptions): HostApprovals {
  const maxPending = o.maxPending ?? MAX_PENDING_HOST_REQUESTS;
  const maxRequests = o.maxRequests ?? MAX_HOST_REQUESTS;
  /** By rule (`host:port`). */
  const requests = new Map<string, HostRequest>();
  for (const view of runApprovals(o.home, o.runId).filter(isHostRequest)) {
    const rule = view.request.facts.rule ?? "";
    if (!rule || requests.has(rule)) continue;
    requests.set(rule, {
      id: view.request.id,
      rule,
      state: view.state,
      ...(view.decision ? { who: view.decision.who } : {}),
      ...(view.decision?.note ? { note: view.decision.note } : {}),
    });
  }
  const used = new Set<string>();
  const lastSettle = new Map<string, number>();
  let history: ((event: HistoryEvent) => void) | undefined;
  let audit: ((event: string, data: Record<string, unknown>) => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  // Decisions are taken up only once the loop has started a sandbox (the gate writes to the run's
  // records from then on); a decision made while no process ran is taken up at the next start.
  let started = false;

  const pending = () => [...requests.values()].filter((r) => r.state === "pending");
  const approvedRules = () => [...requests.values()].filter((r) => r.state === "approved").map((r) => r.rule);

  const settle = (r: HostRequest): void => {
    const answer = o.gate.takeUp(r.id);
    if (!answer) return;
    if ("approved" in answer) {
      const wasApproved = r.state === "approved";
      r.state = answer.approved ? "approved" : "denied";
      r.who = answer.decision.who;
      if (answer.decision.note) r.note = answer.decision.note;
      if (answer.approved && !wasApproved) allowOnRunProxies(o.runId, r.rule);
    } else {
      r.state = answer.state;
    }
  };

  const poll = (): void => {
    if (!started) return;
    for (const r of pending()) settle(r);
    if (pending().length === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  const watch = (): void => {
    if (timer || pending().length === 0) return;
    timer = setInterval(() => {
      try {
        poll();
      } catch {
        // the approvals file unreadable for a moment: the next tick tries again
      }
    }, o.pollMs ?? 500);
    timer.unref();
  };

  const advise = (sandbox: ProxiedSandbox, host: string, port: number): string | undefined => {
    if (sandbox.runId !== o.runId) return undefined;
    const key = `${host}:${port}`;
    const site = siteAllowsHost(o.site, host, port);
    if (!site.ok) return `${site.why}, so no approval can be asked for it`;
    const known = requests.get(site.rule);
    if (known) {
      // A refusal can come thousands of times a second: the approvals file is read for it at most
      // every ADVISE_SETTLE_MS (the poller reads it too).
      if (known.state === "pending" && Date.now() - (lastSettle.get(known.id) ?? 0) >= ADVISE_SETTLE_MS) {
        lastSettle.set(known.id, Date.now());
        settle(known);
      }
      switch (known.state) {
        case "approved":
          // Approved after this proxy started and before it was told: it is told now.
          allowOnRunProxies(o.runId, known.rule);
          return `approval request ${known.id} for ${key} was approved: retry now`;
        case "pending":
          return `approval request ${known.id} for ${key} is pending (filed earlier in this run): retry after a person approves it`;
        case "denied":
          return `approval request ${known.id} for ${key} was denied${known.who ? ` by ${known.who}` : ""}${known.note ? `: ${known.note}` : ""}; it is not asked again in this run`;
        default:
          return `approval request ${known.id} for ${key} was not decided (${known.state.replace("_", " ")}); it is not asked again in this run`;
      }
    }
    if (requests.size >= maxRequests)
      return `this run has asked for ${requests.size} hosts already (at most ${maxRequests} a run), so none was filed for ${key}`;
    const waiting = pending().length;
    if (waiting >= maxPending)
      return `${waiting} approval requests for hosts are pending (at most ${maxPending} at once), so none was filed for ${key}: retry after they are decided`;
    const request = o.gate.file({
      action: "network",
      summary: `let the work sandbox of ${o.task} reach ${key} for the rest of the run (not on its network list)`,
      detail: [
        `The agent asked the run's proxy for ${key}, which is not on the task's network list (${o.listed.join(", ")}); the connection was refused.`,
        `Approved: ${site.rule} is added to the run's proxy for the rest of the run: the running work sandbox at once and every later work sandbox (a resumed run too). Checks and the review never have network.`,
        "Denied: it stays refused, and the agent reads who denied it and why.",
        `The site policy allows a SAM to list it (allowedHosts: ${o.site.allowedHosts.join(", ")}; deniedHosts: ${o.site.deniedHosts.join(", ") || "none"}).`,
      ].join("\n"),
      facts: { kind: HOST_REQUEST_KIND, host, port: String(port), rule: site.rule, sandbox: sandbox.name },
    });
    requests.set(site.rule, { id: request.id, rule: site.rule, state: "pending" });
    watch();
    return `approval request ${request.id} was filed: retry after a person approves it (${key} is then reachable for the rest of the run)`;
  };

  const unadvise = onNotListedHost(advise);
  const unlisten = onNetworkRecord((sandbox, record) => {
    if (!record.allowed || sandbox.runId !== o.runId) return;
    const rule = record.rule.replace(/^allow /, "");
    const r = requests.get(rule);
    if (r?.state !== "approved" || used.has(rule)) return;
    used.add(rule);
    const facts = {
      id: r.id,
      rule,
      sandbox: sandbox.name,
      host: record.host,
      port: record.port,
      ...(record.address ? { address: record.address } : {}),
    };
    try {
      history?.({ type: "approved_host_used", ...facts });
      audit?.("approved_host_used", facts);
    } catch {
      // the run has ended (its tapes are closed); the connection is on its proxy's record still
    }
  });

  return {
    approved: approvedRules,
    advise,
    poll,
    onHistory(append) {
      history = append;
    },
    onAudit(append) {
      audit = append;
    },
    networkAllow() {
      if (!started) {
        started = true;
        // Decisions made while no process drove the run go on its records now.
        for (const r of requests.values()) if (r.state !== "pending") settle(r);
      }
      poll();
      watch();
      return approvedRules();
    },
    async end() {
      unadvise();
      unlisten();
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
