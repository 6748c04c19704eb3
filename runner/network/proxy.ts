// The run's network proxy: the only way out of a sandbox whose SAM names hosts (`network: [..]`).
// An HTTP forward proxy (absolute-URI requests) and HTTPS CONNECT tunnels, nothing else. Each
// request is checked against the rules (exact and `*.` wildcard hosts, optional port; deny wins),
// the name is resolved here (the sandbox has no DNS of its own), every answer in a private,
// loopback, link-local, multicast or otherwise special range is refused unless the site lists the
// range, and the connection goes to the address checked (no second lookup, no DNS rebinding).
// Every connection, allowed or refused, is recorded (host, port, bytes, time, rule); a refusal
// answers 403 with a readable reason.
import { lookup } from "node:dns/promises";
import { BlockList, connect, createServer, isIP, type Server, type Socket } from "node:net";
import type { ConnectionKind, ConnectionRecord } from "../memory/history-events.ts";
import {
  DEFAULT_PORTS,
  type HostRule,
  type NetworkRules,
  parseCidr,
  parseHostRule,
} from "../sam/host-rules.ts";

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

/** An allow rule without a port allows 80 and 443; a deny rule without a port denies every port. */
function matches(rule: HostRule, host: string, port: number, deny = false): boolean {
  const portOk = rule.port === undefined ? deny || DEFAULT_PORTS.includes(port) : rule.port === port;
  if (!portOk) return false;
  return rule.wildcard ? host.endsWith(`.${rule.host}`) : host === rule.host;
}

/** Special ranges an answer may not fall in unless the site lists it (IPv4 and IPv6). */
export const SPECIAL_RANGES: readonly [string, number, "ipv4" | "ipv6"][] = [
  ["0.0.0.0", 8, "ipv4"],
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"],
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"],
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["224.0.0.0", 4, "ipv4"],
  ["240.0.0.0", 4, "ipv4"],
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["fc00::", 7, "ipv6"],
  ["fe80::", 10, "ipv6"],
  ["ff00::", 8, "ipv6"],
  ["64:ff9b::", 96, "ipv6"],
];

export class Rules {
  readonly allow: HostRule[];
  /** `*` in the allow list (`network: true` through the proxy): any host, any port, deny still wins. */
  readonly anyHost: boolean;
  readonly deny: HostRule[];
  private readonly special = new BlockList();
  private readonly permitted = new BlockList();

  constructor(rules: NetworkRules) {
    const parse = (t: string) => {
      const r = parseHostRule(t);
      if (!r) throw new Error(`not a host rule: ${JSON.stringify(t)} (write host, *.host or host:port)`);
      return r;
    };
    this.anyHost = rules.allow.includes("*");
    this.allow = rules.allow.filter((t) => t !== "*").map(parse);
    this.deny = rules.deny.map(parse);
    for (const [net, prefix, type] of SPECIAL_RANGES) this.special.addSubnet(net, prefix, type);
    for (const text of rules.allowedPrivateRanges) {
      const c = parseCidr(text);
      if (!c) throw new Error(`not an address range: ${JSON.stringify(text)} (write e.g. 10.1.0.0/16)`);
      this.permitted.addSubnet(c.net, c.prefix, c.type);
    }
  }

  /** Adds an allow rule for the rest of the run (an approved request); a rule already there is kept once. */
  addAllow(text: string): void {
    const r = parseHostRule(text);
    if (!r) throw new Error(`not a host rule: ${JSON.stringify(text)}`);
    if (!this.allow.some((a) => a.text === r.text)) this.allow.push(r);
  }

  /** The name check: which rule allows `host:port`, or why not. */
  check(
    host: string,
    port: number,
  ): { allowed: true; rule: string } | { allowed: false; rule: string; reason: string } {
    const h = host.toLowerCase().replace(/\.$/, "");
    const denied = this.deny.find((r) => matches(r, h, port, true));
    if (denied)
      return {
        allowed: false,
        rule: `deny ${denied.text}`,
        reason: `${h}:${port} is denied by the site (${denied.text})`,
      };
    const allowed = this.allow.find((r) => matches(r, h, port));
    if (allowed) return { allowed: true, rule: `allow ${allowed.text}` };
    if (this.anyHost) return { allowed: true, rule: "allow * (network: true)" };
    if (isIP(h.replace(/^\[|\]$/g, "")))
      return {
        allowed: false,
        rule: "raw-ip",
        reason: `${h} is an address, not a host on the list; only listed host names are reachable`,
      };
    return {
      allowed: false,
      rule: "not-listed",
      reason: `${h}:${port} is not on this task's network list (allowed: ${this.allow.map((r) => r.text).join(", ") || "nothing"})`,
    };
  }

  /** Whether an answer may be connected to. */
  addressAllowed(address: string): boolean {
    const type = isIP(address) === 6 ? "ipv6" : "ipv4";
    let a = address;
    let t: "ipv4" | "ipv6" = type;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) {
      a = mapped[1];
      t = "ipv4";
    }
    if (!this.special.check(a, t)) return true;
    return this.permitted.check(a, t);
  }
}

class Refusal extends Error {
  readonly rule: string;
  readonly reason: string;
  constructor(rule: string, reason: string) {
    super(reason);
    this.rule = rule;
    this.reason = reason;
  }
}

/** Most bytes of a request head (request line and headers) the proxy reads before refusing. */
const MAX_HEAD = 64 * 1024;

/** Capture records a proxy keeps before it only counts (a sandbox can send many on purpose). */
export const MAX_CAPTURE_RECORDS = 500;

/**
 * The proxy reads each client connection's first request head itself. CONNECT: the tunnel to the
 * admitted address. An absolute-URI request (`GET http://host/path`): the head is rewritten to
 * origin form with `Connection: close`, and the connection becomes a tunnel to that one admitted
 * address, as a CONNECT would: whatever else the client sends on it can reach only that host, and
 * the bytes are not parsed again (which keeps the proxy at the speed of a pipe).
 */
export class NetworkProxy {
  readonly rules: Rules;
  readonly records: ConnectionRecord[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly options: ProxyOptions;
  private captured = 0;

  constructor(options: ProxyOptions) {
    this.options = options;
    this.rules = new Rules(options.rules);
    // Half-open: a client that ends its side after the request still gets the whole answer.
    this.server = createServer({ allowHalfOpen: true }, (s) => {
      s.setNoDelay(true);
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
      s.on("error", () => {});
      this.readHead(s);
    });
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
  }

  /** A record the proxy did not see itself (the capture could not be set up), on the same path. */
  note(r: ConnectionRecord): void {
    this.record(r);
  }

  private record(r: ConnectionRecord): void {
    this.records.push(r);
    this.options.onRecord?.(r);
  }

  /** Rules, then the proxy's own lookup, then the address check; the address to connect to. */
  private async admit(host: string, port: number): Promise<{ rule: string; address: string }> {
    const bare = host.replace(/^\[|\]$/g, "");
    const verdict = this.rules.check(bare, port);
    if (!verdict.allowed) {
      let reason = verdict.reason;
      if (verdict.rule === "not-listed") {
        try {
          const more = this.options.onNotListed?.(bare.toLowerCase().replace(/\.$/, ""), port);
          if (more) reason = `${reason}; ${more}`;
        } catch {
          // an advisor's failure never changes the refusal
        }
      }
      throw new Refusal(verdict.rule, reason);
    }
    const addresses = await this.resolve(bare);
    if (addresses.length === 0) throw new Refusal("no-address", `${bare} does not resolve`);
    const bad = addresses.find((a) => !this.rules.addressAllowed(a));
    if (bad !== undefined)
      throw new Refusal(
        "private-address",
        `${bare} resolves to ${bad}, a private, loopback, link-local or multicast address the site does not allow`,
      );
    return { rule: verdict.rule, address: addresses[0] as string };
  }

  private async resolve(host: string): Promise<string[]> {
    if (isIP(host)) return [host];
    const pinned = this.options.hosts?.[host.toLowerCase()];
    if (pinned) return pinned;
    if (this.options.systemResolver === false) return [];
    try {
      return (await lookup(host, { all: true })).map((a) => a.address);
    } catch {
      return [];
    }
  }

  private readHead(client: Socket): void {
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) {
        if (buf.length > MAX_HEAD) {
          client.off("data", onData);
          this.refuseClient(
            client,
            "http",
            "",
            0,
            new Refusal("bad-request", "the request head is too long"),
            Date.now(),
          );
        }
        return;
      }
      client.off("data", onData);
      client.pause();
      const head = buf.subarray(0, end).toString("latin1");
      const rest = buf.subarray(end + 4);
      void this.onHead(client, head, rest);
    };
    client.on("data", onData);
  }

  private async onHead(client: Socket, head: string, rest: Buffer): Promise<void> {
    const start = Date.now();
    const [requestLine = "", ...headerLines] = head.split("\r\n");
    const [method = "", target = "", version = "HTTP/1.1"] = requestLine.split(" ");
    if (method === "SCIFI-CAPTURE") return this.onCapture(client, requestLine, start);
    let kind: ConnectionKind = "http";
    let host = "";
    let port = 0;
    let upstreamHead: Buffer | undefined;
    try {
      if (method.toUpperCase() === "CONNECT") {
        kind = "connect";
        const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
        host = (m?.[1] ?? target).toLowerCase();
        port = Number(m?.[2] ?? 0);
        if (!m || port < 1 || port > 65535)
          throw new Refusal("bad-request", `CONNECT needs host:port, got ${JSON.stringify(target)}`);
      } else {
        let url: URL;
        try {
          url = new URL(target);
        } catch {
          throw new Refusal(
            "bad-request",
            `the proxy takes absolute http:// URLs (or CONNECT), got ${JSON.stringify(target.slice(0, 200))}`,
          );
        }
        host = url.hostname.toLowerCase();
        port = url.port ? Number(url.port) : 80;
        if (url.protocol !== "http:")
          throw new Refusal(
            "bad-request",
            `only http:// URLs are proxied (https goes through CONNECT), got ${url.protocol}`,
          );
        if (!/^[A-Z]+$/.test(method) || !/^HTTP\/1\.[01]$/.test(version))
          throw new Refusal("bad-request", "not an HTTP/1.x request");
        const kept = headerLines.filter((l) => {
          const name = l.slice(0, l.indexOf(":")).trim().toLowerCase();
          return name !== "host" && !HOP_BY_HOP.includes(name);
        });
        upstreamHead = Buffer.from(
          `${method} ${url.pathname}${url.search} ${version}\r\nHost: ${url.host}\r\n${kept.map((l) => `${l}\r\n`).join("")}Connection: close\r\n\r\n`,
          "latin1",
        );
      }
      const admitted = await this.admit(host, port);
      this.tunnel(client, kind, host, port, admitted, upstreamHead, rest, start);
    } catch (e) {
      this.refuseClient(client, kind, host, port, e, start);
    }
  }

  /**
   * A connection, query or datagram the capture caught (`SCIFI-CAPTURE tcp 10.0.0.5 8080`, `dns
   * name 53`, `udp - 0`): always refused, recorded (up to MAX_CAPTURE_RECORDS), with the reason
   * sent back for the forwarder to pass on. Anyone in the sandbox can send such a line to the socket;
   * it can only add refusals to the record, never open anything.
   */
  private onCapture(client: Socket, requestLine: string, start: number): void {
    const [, what = "", rawHost = "", rawPort = "0"] = requestLine.split(" ");
    const kind: ConnectionKind = what === "tcp" ? "direct" : what === "dns" ? "dns" : "udp";
    const host = rawHost.replace(/[^0-9A-Za-z.:_-]/g, "?").slice(0, 253);
    const port = Math.min(65535, Math.max(0, Number.parseInt(rawPort, 10) || 0));
    const via = `the sandbox reaches the network only through the proxy (HTTP_PROXY/HTTPS_PROXY, http://127.0.0.1:3128), which allows: ${this.rules.allow.map((r) => r.text).join(", ") || "nothing"}`;
    const reason =
      kind === "direct"
        ? `a direct connection to ${host}:${port} is refused: ${via}`
        : kind === "dns"
          ? `the DNS query for ${host} is refused: the sandbox has no DNS; the proxy resolves the names on the list itself (use the proxy variables)`
          : "a UDP datagram is refused: the sandbox has no network but the proxy";
    this.captured++;
    if (this.captured <= MAX_CAPTURE_RECORDS || this.captured === MAX_CAPTURE_RECORDS + 1)
      this.record({
        time: new Date(start).toISOString(),
        kind,
        host: this.captured > MAX_CAPTURE_RECORDS ? "-" : host,
        port: this.captured > MAX_CAPTURE_RECORDS ? 0 : port,
        allowed: false,
        rule: this.captured > MAX_CAPTURE_RECORDS ? "capture-flood" : `capture-${kind}`,
        reason:
          this.captured > MAX_CAPTURE_RECORDS
            ? `more than ${MAX_CAPTURE_RECORDS} connections, queries or datagrams outside the proxy: the rest are refused without a record`
            : reason,
        bytesOut: 0,
        bytesIn: 0,
        durationMs: 0,
      });
    const body = `scifi network proxy: ${reason}\n`;
    client.end(
      `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Scifi-Refused: capture-${kind}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
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
    const body = `scifi network proxy: refused ${host}:${port}: ${r.reason}\n`;
    client.end(
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
