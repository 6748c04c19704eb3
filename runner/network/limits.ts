// What one sandbox can make the runner hold through its proxy, and what it can make the runner
// write. The agent drives the proxy's socket from inside the sandbox (through the forwarder or
// directly); without caps, unfinished request heads or idle tunnels grow the runner's descriptors and
// memory until the run dies, and refusals with huge names grow the run's history. Each cap, when hit,
// turns into refusal (a connection closed, a record counted instead of written) and one `flood`
// record for the sandbox, never into growth. An allowed connection is never made without its record:
// once no more could be written, new connections are refused.

import type { ConnectionKind, ConnectionRecord } from "../memory/history-events.ts";
import { MAX_HOST_LENGTH } from "../sam/host-name.ts";

export interface ProxyLimits {
  /** Client connections open at once; a tunnel holds one more descriptor, to its host. */
  maxConnections: number;
  /** A request head must have arrived whole this long (ms) after its connection opened. */
  headTimeoutMs: number;
  /** A tunnel (or an upstream still connecting) with no byte either way for this long (ms) is closed. */
  idleTimeoutMs: number;
  /** Bytes of one request head (request line and headers). */
  maxHeadBytes: number;
  /** Bytes of unfinished request heads held at once, all connections together. */
  maxBufferedBytes: number;
  /**
   * Records kept per sandbox: allowed connections, refused ones, what the capture caught (direct
   * TCP, datagrams), and name lookups. Lookups have their own cap: they are not integrity evidence
   * (docs/integrity.md), so they must not use up the records that are.
   */
  maxRecords: Record<RecordClass, number>;
  /** Bytes of records per sandbox (each record as a JSON line). */
  maxRecordBytes: number;
}

export type RecordClass = "allowed" | "refused" | "capture" | "lookup";

export const DEFAULT_PROXY_LIMITS: ProxyLimits = {
  maxConnections: 128,
  headTimeoutMs: 10_000,
  idleTimeoutMs: 300_000,
  maxHeadBytes: 64 * 1024,
  maxBufferedBytes: 2 * 1024 * 1024,
  maxRecords: { allowed: 10_000, refused: 500, capture: 500, lookup: 500 },
  maxRecordBytes: 4 * 1024 * 1024,
};

/** The rule of the one record that counts the refusals a sandbox's caps left unrecorded. */
export const REFUSALS_NOT_RECORDED = "refusals-not-recorded";

/** Bytes kept free for the record of an allowed connection before it is let through. */
const ALLOWED_RECORD_RESERVE = 2048;

/** Most characters of a record's reason (agent text inside it is quoted and cut before that). */
export const MAX_REASON_LENGTH = 600;

function recordClass(r: ConnectionRecord): RecordClass {
  if (r.kind === "dns") return "lookup";
  if (r.kind === "direct" || r.kind === "udp") return "capture";
  return r.allowed ? "allowed" : "refused";
}

/** Host and reason bounded, whatever built them. */
export function boundRecord(r: ConnectionRecord): ConnectionRecord {
  const host =
    r.host.length > MAX_HOST_LENGTH || /[^\x21-\x7e]/.test(r.host)
      ? r.host.slice(0, MAX_HOST_LENGTH).replace(/[^\x21-\x7e]/g, "?")
      : r.host;
  const reason =
    r.reason !== undefined && r.reason.length > MAX_REASON_LENGTH
      ? `${r.reason.slice(0, MAX_REASON_LENGTH)} ... (reason cut at ${MAX_REASON_LENGTH} characters)`
      : r.reason;
  return { ...r, host, ...(reason !== undefined ? { reason } : {}) };
}

/**
 * The records of one sandbox: each class up to its cap, all together up to the byte cap; past any
 * cap, and on any other cap of the proxy (connections, buffered bytes), one `flood` record and then
 * only counts.
 */
export class RecordBudget {
  private readonly limits: ProxyLimits;
  private readonly kept: Record<RecordClass, number> = { allowed: 0, refused: 0, capture: 0, lookup: 0 };
  private bytes = 0;
  private flooded = false;
  /** What went over a cap, by cap: records dropped, connections refused or closed. */
  readonly over: Record<string, number> = {};
  /** Refused connections (not lookups) whose record was dropped over a cap: said once at the end. */
  refusalsDropped = 0;

  constructor(limits: ProxyLimits) {
    this.limits = limits;
  }

  /** The records to write for `r`: itself, the flood record once, or nothing. */
  admit(r: ConnectionRecord): ConnectionRecord[] {
    const bounded = boundRecord(r);
    const cls = recordClass(bounded);
    const size = JSON.stringify(bounded).length + 1;
    const over =
      this.kept[cls] >= this.limits.maxRecords[cls]
        ? `${this.limits.maxRecords[cls]} records of ${cls} connections`
        : this.bytes + size > this.limits.maxRecordBytes
          ? `${this.limits.maxRecordBytes} bytes of records`
          : undefined;
    if (over !== undefined) {
      if (!bounded.allowed && bounded.kind !== "dns") this.refusalsDropped++;
      return this.flood(bounded.kind, over);
    }
    this.kept[cls]++;
    this.bytes += size;
    return [bounded];
  }

  /**
   * Whether an allowed connection could still be recorded: a connection the records could not
   * show is refused instead (what reached out is always on the record).
   */
  canRecordAllowed(): boolean {
    return (
      this.kept.allowed < this.limits.maxRecords.allowed &&
      this.bytes + ALLOWED_RECORD_RESERVE <= this.limits.maxRecordBytes
    );
  }

  /**
   * At the sandbox's end, when refusals went unrecorded over a cap: one record saying how many (the
   * run's integrity record makes it one `overflow` event), so the count says it is a lower bound.
   */
  droppedRefusals(): ConnectionRecord[] {
    if (this.refusalsDropped === 0) return [];
    return [
      {
        time: new Date().toISOString(),
        kind: "direct",
        host: "-",
        port: 0,
        allowed: false,
        rule: REFUSALS_NOT_RECORDED,
        reason: `${this.refusalsDropped} more refused connections of this sandbox than its records take: refused, counted, not recorded one by one`,
        bytesOut: 0,
        bytesIn: 0,
        durationMs: 0,
      },
    ];
  }

  /** A cap was hit (`cap` says which): the flood record the first time, else nothing. */
  flood(kind: ConnectionKind, cap: string): ConnectionRecord[] {
    this.over[cap] = (this.over[cap] ?? 0) + 1;
    if (this.flooded) return [];
    this.flooded = true;
    return [
      {
        time: new Date().toISOString(),
        kind,
        host: "-",
        port: 0,
        allowed: false,
        rule: "flood",
        reason: `the sandbox went over the proxy's cap of ${cap}: from now on what is over a cap is refused or closed, and a record over its cap is counted, not written (this is the only flood record of this sandbox)`,
        bytesOut: 0,
        bytesIn: 0,
        durationMs: 0,
      },
    ];
  }
}
