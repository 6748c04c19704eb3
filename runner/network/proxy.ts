// The run's network proxy: the only way out of a sandbox whose SAM names hosts (`network: [..]`).
// An HTTP forward proxy (absolute-URI requests) and HTTPS CONNECT tunnels, nothing else. Each
// request is checked against the rules (exact and `*.` wildcard hosts, optional port; deny wins),
// the name is resolved here (the sandbox has no DNS of its own), every answer in a private,
// loopback, link-local, multicast or otherwise special range is refused unless the site lists the
// range, and the connection goes to the address checked (no second lookup, no DNS rebinding).
// Every connection, allowed or refused, is recorded (host, port, bytes, time, rule); a refusal
// answers 403 with a readable reason. Names are parsed by one strict grammar (host-name.ts) before
// any rule sees them; what one sandbox can make the proxy hold or write is capped (limits.ts).
import { lookup } from "node:dns/promises";
import { connect, createServer, isIP, type Server, type Socket } from "node:net";
import type { ConnectionKind, ConnectionRecord } from "../memory/history-events.ts";
import { formatHost, type Host, parseAuthority, quoteText } from "../sam/host-name.ts";
import type { NetworkRules } from "../sam/host-rules.ts";
import { DEFAULT_PROXY_LIMITS, type ProxyLimits, RecordBudget } from "./limits.ts";
import { hostRanges, Rules } from "./rules.ts";

export interface ProxyOptions {
  rules: NetworkRules;
  /** Called once per connection when it ends (or is refused). */
  onRecord?: (record: ConnectionRecord) => void;
  /**
   * The proxy's own resolver configuration: names answered from here first (tests, sites that pin a
   * data server); others go to the system resolver unless `systemResolver` is false.
   */
  hosts?: Record<string, string[]>;
  systemResolver?: boolean;
  /**
   * Told of each name refused because it is not on the list (`not-listed`), before the refusal is
   * answered and recorded; what it returns is added to the reason the sandbox reads (e.g. that an
   * approval request was filed). Synchronous: the answer does not wait for a person.
   */
  onNotListed?: (host: string, port: number) => string | undefined;
  /** Caps on what the sandbox can make the proxy hold or record (defaults: DEFAULT_PROXY_LIMITS). */
  limits?: Partial<ProxyLimits>;
}

const HOP_BY_HOP = [
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "connection",
  "keep-alive",
  "te",
  "trailer",
  "upgrade",
];

class Refusal extends Error {
  readonly rule: string;
  readonly reason: string;
  constructor(rule: string, reason: string) {
    super(reason);
    this.rule = rule;
    this.reason = reason;
  }
}

/** Capture records a proxy keeps before it only counts (a sandbox can send many on purpose). */
export const MAX_CAPTURE_RECORDS = DEFAULT_PROXY_LIMITS.maxRecords.capture;

/** How long a refused client has to take its answer before its connection is closed anyway. */
const REFUSAL_LINGER_MS = 5_000;

/**
 * The proxy reads each client connection's first request head itself. CONNECT: the tunnel to the
 * admitted address. An absolute-URI request (`GET http://host/path`): the head is rewritten to
 * origin form with `Connection: close`, and the connection becomes a tunnel to that one admitted
 * address, as a CONNECT would: whatever else the client sends on it can reach only that host, and
 * the bytes are not parsed again (which keeps the proxy at the speed of a pipe).
 */
export class NetworkProxy {
  readonly rules: Rules;
  /** What was recorded (bounded by the limits' record caps). */
  readonly records: ConnectionRecord[] = [];
  readonly limits: ProxyLimits;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly options: ProxyOptions;
  private readonly budget: RecordBudget;
  /** Bytes of unfinished request heads held now, all connections together. */
  private headBytes = 0;
  /** Why no new connection is allowed any more (the run's records quota is spent), when that is so. */
  private stopped: string | undefined;

  constructor(options: ProxyOptions) {
    this.options = options;
    this.rules = new Rules(options.rules);
    this.limits = {
      ...DEFAULT_PROXY_LIMITS,
      ...options.limits,
      maxRecords: { ...DEFAULT_PROXY_LIMITS.maxRecords, ...options.limits?.maxRecords },
    };
    this.budget = new RecordBudget(this.limits);
    // Half-open: a client that ends its side after the request still gets the whole answer.
    this.server = createServer({ allowHalfOpen: true }, (s) => {
      s.setNoDelay(true);
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      s.on("error", () => {});
      this.readHead(s);
    });
    // Past the cap a new connection is closed as it is accepted, before any buffer exists for it.
    this.server.maxConnections = this.limits.maxConnections;
    this.server.on("drop", () =>
      this.flood("connect", `${this.limits.maxConnections} connections open at once`),
    );
  }

  /** Listens on a TCP port (host, port; 0 picks one) or a unix socket path. */
  async listen(where: { host: string; port: number } | { path: string }): Promise<string | number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      if ("path" in where) this.server.listen(where.path, () => resolve());
      else this.server.listen(where.port, where.host, () => resolve());
    });
    const a = this.server.address();
    return typeof a === "string" ? a : (a?.port ?? 0);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const r of this.budget.droppedRefusals()) this.emit(r);
  }

  /** Client connections open now, and what went over a cap so far (by cap). */
  stats(): { open: number; headBytes: number; over: Record<string, number> } {
    return { open: this.sockets.size, headBytes: this.headBytes, over: { ...this.budget.over } };
  }

  /** From now on every new connection is refused (`why`: the cap that is spent); open ones go on. */
  stopAllowing(why: string): void {
    this.stopped ??= why;
  }

  /** A record the proxy did not see itself (the capture could not be set up), on the same path. */
  note(r: ConnectionRecord): void {
    this.record(r);
  }

  private record(r: ConnectionRecord): void {
    for (const kept of this.budget.admit(r)) this.emit(kept);
  }

  private flood(kind: ConnectionKind, cap: string): void {
    for (const kept of this.budget.flood(kind, cap)) this.emit(kept);
  }

  private emit(r: ConnectionRecord): void {
    this.records.push(r);
    this.options.onRecord?.(r);
  }

  /** Rules, then the proxy's own lookup, then the address check; the address to connect to. */
  private async admit(host: Host, port: number): Promise<{ rule: string; address: string }> {
    const verdict = this.rules.check(host, port);
    if (!verdict.allowed) {
      let reason = verdict.reason;
      if (verdict.rule === "not-listed" && host.kind === "name") {
        try {
          const more = this.options.onNotListed?.(host.name, port);
          if (more) reason = `${reason}; ${more}`;
        } catch {
          // an advisor's failure never changes the refusal
        }
      }
      throw new Refusal(verdict.rule, reason);
    }
    const shown = formatHost(host);
    const full =
      this.stopped ?? (this.budget.canRecordAllowed() ? undefined : "the records of its connections");
    if (full !== undefined) {
      this.flood("connect", full);
      throw new Refusal(
        "over-cap",
        `${shown}:${port} is allowed, but this sandbox is over its cap of ${full}: no connection is made that could not be recorded`,
      );
    }
    const addresses = await this.resolve(host);
    if (addresses.length === 0) throw new Refusal("no-address", `${shown} does not resolve`);
    for (const a of addresses) {
      const denied = this.rules.deniedAddress(a, port);
      if (denied)
        throw new Refusal(
          `deny ${denied.text}`,
          `${shown} resolves to ${a}, which the site denies (${denied.text})`,
        );
    }
    // This host's addresses as they are now, read once for all the answers.
    const local = hostRanges();
    for (const a of addresses) {
      const problem = this.rules.addressProblem(a, local);
      if (problem === "special")
        throw new Refusal(
          "private-address",
          `${shown} resolves to ${a}, a private, loopback, link-local or multicast address the site does not allow`,
        );
      if (problem === "this-host")
        throw new Refusal(
          "host-address",
          `${shown} resolves to ${a}, an address of the runner's host or of a network it is on, which the site does not allow`,
        );
    }
    return { rule: verdict.rule, address: addresses[0] as string };
  }

  private async resolve(host: Host): Promise<string[]> {
    if (host.kind === "ip") return [host.address];
    const pinned = this.options.hosts?.[host.name];
    if (pinned) return pinned;
    if (this.options.systemResolver === false) return [];
    try {
      // A zone id in an answer (fe80::1%eth0) is no address to check or to connect to.
      return (await lookup(host.name, { all: true })).map((a) => a.address).filter((a) => isIP(a) !== 0);
    } catch {
      return [];
    }
  }

  /**
   * Collects the request head, within the head deadline and the byte caps (one head, and all
   * unfinished heads together); past them the connection is closed.
   */
  private readHead(client: Socket): void {
    const chunks: Buffer[] = [];
    let length = 0;
    let done = false;
    const release = () => {
      done = true;
      clearTimeout(deadline);
      client.off("data", onData);
      this.headBytes -= length;
    };
    const deadline = setTimeout(() => {
      if (done) return;
      release();
      this.refuseClient(
        client,
        "http",
        "",
        0,
        new Refusal(
          "head-timeout",
          `no whole request head within ${this.limits.headTimeoutMs / 1000} s of the connection`,
        ),
        Date.now(),
      );
    }, this.limits.headTimeoutMs);
    deadline.unref();
    client.once("close", () => {
      if (!done) release();
    });
    // A client that ends its side before a whole head has asked nothing: closed now, not at the
    // deadline (half-open sockets would otherwise hold their place under the connection cap).
    client.once("end", () => {
      if (done) return;
      release();
      client.destroy();
    });
    // The end of the head is looked for in each new chunk and the three bytes before it only: a
    // head sent a byte at a time costs no more than one sent at once.
    let tail: Buffer = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      chunks.push(d);
      length += d.length;
      this.headBytes += d.length;
      const window = tail.length ? Buffer.concat([tail, d]) : d;
      const at = window.indexOf("\r\n\r\n");
      if (at >= 0) {
        const end = length - d.length - tail.length + at;
        const whole = Buffer.concat(chunks, length);
        release();
        client.pause();
        void this.onHead(client, whole.subarray(0, end).toString("latin1"), whole.subarray(end + 4));
        return;
      }
      tail = window.subarray(Math.max(0, window.length - 3));
      if (length > this.limits.maxHeadBytes) {
        release();
        this.refuseClient(
          client,
          "http",
          "",
          0,
          new Refusal("bad-request", `the request head is longer than ${this.limits.maxHeadBytes} bytes`),
          Date.now(),
        );
        return;
      }
      if (this.headBytes > this.limits.maxBufferedBytes) {
        release();
        client.destroy();
        this.flood("http", `${this.limits.maxBufferedBytes} bytes of unfinished request heads`);
      }
    };
    client.on("data", onData);
  }

  private async onHead(client: Socket, head: string, rest: Buffer): Promise<void> {
    const start = Date.now();
    const [requestLine = "", ...headerLines] = head.split("\r\n");
    const parts = requestLine.split(" ");
    const [method = "", target = "", version = ""] = parts;
    if (method === "SCIFI-CAPTURE") return this.onCapture(client, requestLine, start);
    let kind: ConnectionKind = "http";
    let host = "";
    let port = 0;
    let upstreamHead: Buffer | undefined;
    try {
      if (parts.length !== 3 || !/^[A-Z]+$/.test(method) || !/^HTTP\/1\.[01]$/.test(version))
        throw new Refusal("bad-request", `not an HTTP/1.x request line: ${quoteText(requestLine)}`);
      let parsed: { host: Host; port: number };
      if (method === "CONNECT") {
        kind = "connect";
        const a = parseAuthority(target, { portRequired: true });
        if (!a.ok) throw new Refusal("bad-host", `CONNECT ${quoteText(target)}: ${a.why}`);
        parsed = { host: a.value.host, port: a.value.port ?? 0 };
      } else {
        const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)$/.exec(target);
        if (!m)
          throw new Refusal(
            "bad-request",
            `the proxy takes absolute http:// URLs (or CONNECT), got ${quoteText(target)}`,
          );
        const [, scheme = "", authority = "", path = ""] = m;
        if (scheme.toLowerCase() !== "http")
          throw new Refusal(
            "bad-request",
            `only http:// URLs are proxied (https goes through CONNECT), got ${quoteText(scheme, 20)}:`,
          );
        const a = parseAuthority(authority);
        if (!a.ok) throw new Refusal("bad-host", `${quoteText(target)}: ${a.why}`);
        parsed = { host: a.value.host, port: a.value.port ?? 80 };
        const kept: string[] = [];
        for (const l of headerLines) {
          const name = l.slice(0, l.indexOf(":")).trim().toLowerCase();
          if (name === "host") {
            // The URI names the host (RFC 9112); a Host header that is no host at all is refused.
            const h = parseAuthority(l.slice(l.indexOf(":") + 1).trim());
            if (!h.ok) throw new Refusal("bad-host", `the Host header: ${h.why}`);
          } else if (!HOP_BY_HOP.includes(name)) kept.push(l);
        }
        const shownHost = formatHost(parsed.host);
        const hostHeader = parsed.port === 80 ? shownHost : `${shownHost}:${parsed.port}`;
        const origin = path === "" ? "/" : path.startsWith("/") ? path : `/${path}`;
        upstreamHead = Buffer.from(
          `${method} ${origin} ${version}\r\nHost: ${hostHeader}\r\n${kept.map((l) => `${l}\r\n`).join("")}Connection: close\r\n\r\n`,
          "latin1",
        );
      }
      host = formatHost(parsed.host);
      port = parsed.port;
      const admitted = await this.admit(parsed.host, port);
      this.tunnel(client, kind, host, port, admitted, upstreamHead, rest, start);
    } catch (e) {
      this.refuseClient(client, kind, host, port, e, start);
    }
  }

  /**
   * A connection, query or datagram the capture caught (`SCIFI-CAPTURE tcp 10.0.0.5 8080`, `dns
   * name 53`, `udp - 0`): always refused, recorded (within the capture's record cap), with the reason
   * sent back for the forwarder to pass on. Anyone in the sandbox can send such a line to the socket;
   * it can only add refusals to the record, never open anything.
   */
  private onCapture(client: Socket, requestLine: string, start: number): void {
    const [, what = "", rawHost = "", rawPort = "0"] = requestLine.split(" ");
    const kind: ConnectionKind = what === "tcp" ? "direct" : what === "dns" ? "dns" : "udp";
    const host = rawHost.slice(0, 253).replace(/[^0-9A-Za-z.:_-]/g, "?");
    const port = Math.min(65535, Math.max(0, Number.parseInt(rawPort.slice(0, 12), 10) || 0));
    const via = `the sandbox reaches the network only through the proxy (HTTP_PROXY/HTTPS_PROXY, http://127.0.0.1:3128), which allows: ${this.rules.allow.map((r) => r.text).join(", ") || "nothing"}`;
    const reason =
      kind === "direct"
        ? `a direct connection to ${host}:${port} is refused: ${via}`
        : kind === "dns"
          ? `the DNS query for ${host} is refused: the sandbox has no DNS; the proxy resolves the names on the list itself (use the proxy variables)`
          : "a UDP datagram is refused: the sandbox has no network but the proxy";
    this.record({
      time: new Date(start).toISOString(),
      kind,
      host,
      port,
      allowed: false,
      rule: `capture-${kind}`,
      reason,
      bytesOut: 0,
      bytesIn: 0,
      durationMs: 0,
    });
    const body = `scifi network proxy: ${reason}\n`;
    this.answerAndClose(
      client,
      `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Scifi-Refused: capture-${kind}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  /** Writes the answer, then closes, also when the client never reads or never closes its side. */
  private answerAndClose(client: Socket, answer: string): void {
    const linger = setTimeout(() => client.destroy(), REFUSAL_LINGER_MS);
    linger.unref();
    client.once("close", () => clearTimeout(linger));
    client.end(answer, () => client.destroy());
  }

  private refuseClient(
    client: Socket,
    kind: ConnectionKind,
    host: string,
    port: number,
    e: unknown,
    start: number,
  ): void {
    const r = e instanceof Refusal ? e : new Refusal("error", e instanceof Error ? e.message : String(e));
    this.record({
      time: new Date(start).toISOString(),
      kind,
      host,
      port,
      allowed: false,
      rule: r.rule,
      reason: r.reason,
      bytesOut: 0,
      bytesIn: 0,
      durationMs: Date.now() - start,
    });
    const shown = host ? `${host}:${port}` : "the request";
    const body = `scifi network proxy: refused ${shown}: ${r.reason}\n`;
    this.answerAndClose(
      client,
      `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Scifi-Refused: ${r.rule}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }

  private tunnel(
    client: Socket,
    kind: ConnectionKind,
    host: string,
    port: number,
    admitted: { rule: string; address: string },
    upstreamHead: Buffer | undefined,
    rest: Buffer,
    start: number,
  ): void {
    if (client.destroyed) return;
    const upstream = connect({ host: admitted.address, port, noDelay: true, allowHalfOpen: true });
    // The upstream is done: let what it sent reach the client, then close (the record follows).
    const drainClient = () => {
      if (!client.destroyed && !client.writableEnded) client.end(() => client.destroy());
    };
    // Counted by the sockets themselves (no listener on the data path): what the client sent after
    // its request head, and what the upstream sent back.
    const clientReadBefore = client.bytesRead - rest.length;
    const bytesIn = () => upstream.bytesRead;
    const bytesOut = () => client.bytesRead - clientReadBefore;
    let done = false;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      this.record({
        time: new Date(start).toISOString(),
        kind,
        host,
        port,
        address: admitted.address,
        allowed: true,
        rule: admitted.rule,
        ...(error ? { reason: error } : {}),
        bytesOut: bytesOut(),
        bytesIn: bytesIn(),
        durationMs: Date.now() - start,
      });
      upstream.destroy();
      drainClient();
    };
    // Every byte either way passes the client socket, so its inactivity is the tunnel's (an upstream
    // that never answers the connect included).
    client.setTimeout(this.limits.idleTimeoutMs, () => {
      finish(`closed: no byte either way for ${this.limits.idleTimeoutMs / 1000} s`);
      client.destroy();
    });
    upstream.on("error", (e) => {
      if (!client.destroyed && bytesIn() === 0)
        client.write(
          `HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nscifi network proxy: ${host}:${port}: ${e.message}\n`,
        );
      finish(e.message);
    });
    upstream.on("connect", () => {
      if (kind === "connect") client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      else if (upstreamHead) upstream.write(upstreamHead);
      if (rest.length) upstream.write(rest);
      upstream.pipe(client);
      client.pipe(upstream);
      client.resume();
    });
    upstream.on("close", drainClient);
    client.on("close", () => finish());
  }
}
