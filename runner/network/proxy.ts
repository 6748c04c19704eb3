// The run's network proxy: the only way out of a sandbox whose SAM names hosts (`network: [..]`).
// An HTTP forward proxy (absolute-URI requests) and HTTPS CONNECT tunnels, nothing else. Each
// request is checked against the rules (exact and `*.` wildcard hosts, optional port; deny wins),
// the name is resolved here (the sandbox has no DNS of its own), every answer in a private,
// loopback, link-local, multicast or otherwise special range is refused unless the site lists the
// range, and the connection goes to the address checked (no second lookup, no DNS rebinding).
// Every connection, allowed or refused, is recorded (host, port, bytes, time, rule); a refusal
// answers 403 with a readable reason.
import { lookup } from "node:dns/promises";
import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { BlockList, connect, isIP, type Socket } from "node:net";
import type { Duplex } from "node:stream";

/** One rule: `data.example.org`, `*.example.org` (subdomains only), either with `:port`. */
export interface HostRule {
  /** The rule as written, for the record. */
  text: string;
  host: string;
  wildcard: boolean;
  /** Absent: the default ports (80 and 443). */
  port?: number;
}

export interface NetworkRules {
  allow: string[];
  deny: string[];
  /** CIDR ranges in the special ranges that answers may still fall in (the site's `allowedPrivateRanges`). */
  allowedPrivateRanges: string[];
}

export interface ConnectionRecord {
  /** ISO time the request arrived. */
  time: string;
  kind: "http" | "connect";
  host: string;
  port: number;
  /** The address connected to (allowed ones). */
  address?: string;
  allowed: boolean;
  /** The allow rule that matched, or the deny rule / reason kind that refused. */
  rule: string;
  reason?: string;
  /** Bytes from the sandbox to the host, and back. */
  bytesOut: number;
  bytesIn: number;
  durationMs: number;
}

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
}

export const DEFAULT_PORTS = [80, 443];

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

const HOST_RE = /^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** Parses `host`, `*.host`, `host:port`; undefined when it is not one of those. */
export function parseHostRule(text: string): HostRule | undefined {
  const t = text.trim().toLowerCase();
  const m = /^(.*?)(?::(\d{1,5}))?$/.exec(t);
  if (!m) return undefined;
  const hostPart = m[1] ?? "";
  const port = m[2] === undefined ? undefined : Number(m[2]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  const ipOk = isIP(hostPart) === 4;
  if (!ipOk && (!HOST_RE.test(hostPart) || hostPart.length > 253)) return undefined;
  const wildcard = hostPart.startsWith("*.");
  return {
    text: t,
    host: wildcard ? hostPart.slice(2) : hostPart,
    wildcard,
    ...(port !== undefined ? { port } : {}),
  };
}

/** An allow rule without a port allows 80 and 443; a deny rule without a port denies every port. */
function matches(rule: HostRule, host: string, port: number, deny = false): boolean {
  const portOk = rule.port === undefined ? deny || DEFAULT_PORTS.includes(port) : rule.port === port;
  if (!portOk) return false;
  return rule.wildcard ? host.endsWith(`.${rule.host}`) : host === rule.host;
}

/** Special ranges an answer may not fall in unless the site lists it (IPv4 and IPv6). */
const SPECIAL: [string, number, "ipv4" | "ipv6"][] = [
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

function parseCidr(cidr: string): { net: string; prefix: number; type: "ipv4" | "ipv6" } | undefined {
  const [net, p] = cidr.trim().split("/");
  const type = isIP(net ?? "");
  if (!net || !type) return undefined;
  const max = type === 4 ? 32 : 128;
  const prefix = p === undefined ? max : Number(p);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > max) return undefined;
  return { net, prefix, type: type === 4 ? "ipv4" : "ipv6" };
}

/** Whether a string is a CIDR range (`10.1.0.0/16`) or a single address. */
export function isCidr(text: string): boolean {
  return parseCidr(text) !== undefined;
}

export class Rules {
  readonly allow: HostRule[];
  readonly deny: HostRule[];
  private readonly special = new BlockList();
  private readonly permitted = new BlockList();

  constructor(rules: NetworkRules) {
    const parse = (t: string) => {
      const r = parseHostRule(t);
      if (!r) throw new Error(`not a host rule: ${JSON.stringify(t)} (write host, *.host or host:port)`);
      return r;
    };
    this.allow = rules.allow.map(parse);
    this.deny = rules.deny.map(parse);
    for (const [net, prefix, type] of SPECIAL) this.special.addSubnet(net, prefix, type);
    for (const text of rules.allowedPrivateRanges) {
      const c = parseCidr(text);
      if (!c) throw new Error(`not an address range: ${JSON.stringify(text)} (write e.g. 10.1.0.0/16)`);
      this.permitted.addSubnet(c.net, c.prefix, c.type);
    }
  }

  /** Adds an allow rule for the rest of the run (an approved request). */
  addAllow(text: string): void {
    const r = parseHostRule(text);
    if (!r) throw new Error(`not a host rule: ${JSON.stringify(text)}`);
    this.allow.push(r);
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

export class NetworkProxy {
  readonly rules: Rules;
  readonly records: ConnectionRecord[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Duplex>();

  private readonly options: ProxyOptions;

  constructor(options: ProxyOptions) {
    this.options = options;
    this.rules = new Rules(options.rules);
    this.server = createServer({ requireHostHeader: false }, (req, res) => void this.onRequest(req, res));
    this.server.on(
      "connect",
      (req: IncomingMessage, socket: Duplex, head: Buffer) => void this.onConnect(req, socket, head),
    );
    this.server.on("connection", (s: Socket) => {
      s.setNoDelay(true);
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
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

  private record(r: ConnectionRecord): void {
    this.records.push(r);
    this.options.onRecord?.(r);
  }

  /** Rules, then the proxy's own lookup, then the address check; the address to connect to. */
  private async admit(host: string, port: number): Promise<{ rule: string; address: string }> {
    const bare = host.replace(/^\[|\]$/g, "");
    const verdict = this.rules.check(bare, port);
    if (!verdict.allowed) throw new Refusal(verdict.rule, verdict.reason);
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

  private refusedRecord(
    kind: "http" | "connect",
    host: string,
    port: number,
    e: unknown,
    start: number,
  ): Refusal {
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
    return r;
  }

  private async onConnect(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const start = Date.now();
    socket.on("error", () => {});
    const target = req.url ?? "";
    const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target);
    const host = (m?.[1] ?? target).toLowerCase();
    const port = Number(m?.[2] ?? 0);
    let admitted: { rule: string; address: string };
    try {
      if (!m || port < 1 || port > 65535)
        throw new Refusal("bad-request", `CONNECT needs host:port, got ${JSON.stringify(target)}`);
      admitted = await this.admit(host, port);
    } catch (e) {
      const r = this.refusedRecord("connect", host, port, e, start);
      const body = `scifi network proxy: refused ${host}:${port}: ${r.reason}\n`;
      socket.end(
        `HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nX-Scifi-Refused: ${r.rule}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
      return;
    }
    const upstream = connect({ host: admitted.address, port, noDelay: true });
    let bytesOut = head.length;
    let bytesIn = 0;
    let done = false;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      this.record({
        time: new Date(start).toISOString(),
        kind: "connect",
        host,
        port,
        address: admitted.address,
        allowed: true,
        rule: admitted.rule,
        ...(error ? { reason: error } : {}),
        bytesOut,
        bytesIn,
        durationMs: Date.now() - start,
      });
      upstream.destroy();
      socket.destroy();
    };
    upstream.on("error", (e) => {
      if (!socket.destroyed && bytesIn === 0)
        socket.write(
          `HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\nscifi network proxy: ${host}:${port}: ${e.message}\n`,
        );
      finish(e.message);
    });
    upstream.on("connect", () => {
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.on("data", (d: Buffer) => {
        bytesIn += d.length;
      });
      socket.on("data", (d: Buffer) => {
        bytesOut += d.length;
      });
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on("close", () => finish());
    socket.on("close", () => finish());
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const start = Date.now();
    let url: URL;
    try {
      url = new URL(req.url ?? "");
      if (url.protocol !== "http:")
        throw new Error("only http:// URLs are proxied (https goes through CONNECT)");
    } catch (e) {
      const host = req.headers.host ?? "";
      const r = this.refusedRecord(
        "http",
        host,
        0,
        new Refusal("bad-request", e instanceof Error ? e.message : String(e)),
        start,
      );
      refuse(res, r, host, 0);
      return;
    }
    const host = url.hostname.toLowerCase();
    const port = url.port ? Number(url.port) : 80;
    let admitted: { rule: string; address: string };
    try {
      admitted = await this.admit(host, port);
    } catch (e) {
      refuse(res, this.refusedRecord("http", host, port, e, start), host, port);
      return;
    }
    const headers = { ...req.headers };
    for (const h of HOP_BY_HOP) delete headers[h];
    headers.host = url.host;
    let bytesOut = 0;
    let bytesIn = 0;
    let done = false;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      this.record({
        time: new Date(start).toISOString(),
        kind: "http",
        host,
        port,
        address: admitted.address,
        allowed: true,
        rule: admitted.rule,
        ...(error ? { reason: error } : {}),
        bytesOut,
        bytesIn,
        durationMs: Date.now() - start,
      });
    };
    const up = httpRequest(
      {
        host: admitted.address,
        port,
        method: req.method,
        path: `${url.pathname}${url.search}`,
        headers,
        setHost: false,
      },
      (upRes) => {
        const back = { ...upRes.headers };
        for (const h of HOP_BY_HOP) delete back[h];
        res.writeHead(upRes.statusCode ?? 502, back);
        upRes.on("data", (d: Buffer) => {
          bytesIn += d.length;
        });
        upRes.pipe(res);
        upRes.on("end", () => finish());
        upRes.on("error", (e) => finish(e.message));
      },
    );
    up.on("error", (e) => {
      if (!res.headersSent) {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(`scifi network proxy: ${host}:${port}: ${e.message}\n`);
      } else res.destroy();
      finish(e.message);
    });
    req.on("data", (d: Buffer) => {
      bytesOut += d.length;
    });
    req.pipe(up);
    res.on("close", () => finish(res.writableFinished ? undefined : "closed early"));
  }
}

function refuse(res: ServerResponse, r: Refusal, host: string, port: number): void {
  const body = `scifi network proxy: refused ${host}:${port}: ${r.reason}\n`;
  res.writeHead(403, { "content-type": "text/plain", "x-scifi-refused": r.rule, connection: "close" });
  res.end(body);
}
