// One strict grammar for host names, used for every name a rule or a decision sees: the SAM's and the
// site's host rules, CONNECT targets, absolute URIs and Host headers. A host is either a name of LDH
// labels (letters, digits, inner hyphens; IDNA A-labels; at most 253 characters; a last label that is
// not a number, since a resolver would read `127.1` or `0x7f.1` as an address) or an IP literal
// (dotted-quad IPv4, or IPv6 in brackets where a port may follow). Nothing else: no zone ids (`%`),
// escapes (`\`, `%xx`), userinfo, underscores, brackets around names or bytes outside ASCII on the
// wire; a rule written by a person may use Unicode labels, which become their A-labels. The canonical
// form (lowercase, no trailing dot, compressed IPv6) is what rules are matched on and what is resolved,
// so no decoder downstream can read it differently. This file imports nothing of the runner: it can
// move to whichever leaf owns the host-rule vocabulary.
import { isIPv6 } from "node:net";
import { domainToASCII, domainToUnicode } from "node:url";

/** The longest host name (RFC 1035, without the trailing dot). */
export const MAX_HOST_LENGTH = 253;

export type Host =
  /** Lowercase A-labels joined by dots, no trailing dot. */
  | { kind: "name"; name: string }
  /** The address in its canonical text (IPv6 compressed and lowercase, no brackets). */
  | { kind: "ip"; address: string; family: 4 | 6 };

export type Parsed<T> = { ok: true; value: T } | { ok: false; why: string };

export interface HostOptions {
  /** Unicode labels are taken (and turned into A-labels): rules a person wrote. Wire input is ASCII only. */
  unicode?: boolean;
}

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** A last label a resolver (inet_aton) or a URL parser would read as part of an IPv4 address. */
const NUMERIC_LABEL = /^(\d+|0x[0-9a-f]*)$/;

const fail = (why: string): { ok: false; why: string } => ({ ok: false, why });

/** Agent text shown in a reason: printable ASCII only, at most `max` characters, quoted. */
export function quoteText(text: string, max = 80): string {
  const clean = text.slice(0, max).replace(/[^\x20-\x7e]/g, "?");
  return `${JSON.stringify(clean)}${text.length > max ? ` (${text.length} characters, cut)` : ""}`;
}

/** The host as it is written in records and rules: the name, the IPv4 address, or `[IPv6]`. */
export function formatHost(host: Host): string {
  if (host.kind === "name") return host.name;
  return host.family === 6 ? `[${host.address}]` : host.address;
}

function ipv6(inner: string): Parsed<Host> {
  // Hex digits, colons and an embedded IPv4 tail only: no zone id, no escape.
  if (!/^[0-9a-fA-F:.]+$/.test(inner) || !isIPv6(inner))
    return fail(`${quoteText(inner)} is not an IPv6 address (zone ids and escapes are not accepted)`);
  const address = new URL(`http://[${inner}]/`).hostname.slice(1, -1);
  return { ok: true, value: { kind: "ip", address, family: 6 } };
}

/**
 * A host without a port: `name`, `a.b.c.d`, `[v6]` or a bare IPv6 address. Returns the canonical
 * host or why the text is not one.
 */
export function parseHost(text: string, options: HostOptions = {}): Parsed<Host> {
  if (text.length > MAX_HOST_LENGTH + 2)
    return fail(`a host name has at most ${MAX_HOST_LENGTH} characters; this one has ${text.length}`);
  if (text.startsWith("[")) {
    if (!text.endsWith("]")) return fail(`${quoteText(text)} opens a bracket it does not close`);
    return ipv6(text.slice(1, -1));
  }
  if (text.includes(":")) return ipv6(text);
  if (IPV4.test(text)) return { ok: true, value: { kind: "ip", address: text, family: 4 } };
  let name = text;
  if (Array.from(name).some((c) => (c.codePointAt(0) ?? 0) > 0x7f)) {
    if (!options.unicode)
      return fail(`${quoteText(text)} holds bytes outside ASCII (send the A-label, xn--...)`);
    name = domainToASCII(name);
    if (!name) return fail(`${quoteText(text)} is not a valid international domain name`);
  }
  if (/[^A-Za-z0-9.-]/.test(name))
    return fail(
      `${quoteText(text)} is not a host name: only letters, digits, '-' and '.' (no escapes, '%', '_', '@' or brackets)`,
    );
  name = name.toLowerCase();
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (name.length === 0) return fail("the host name is empty");
  if (name.length > MAX_HOST_LENGTH)
    return fail(`a host name has at most ${MAX_HOST_LENGTH} characters; this one has ${name.length}`);
  const labels = name.split(".");
  const bad = labels.find((l) => !LABEL.test(l));
  if (bad !== undefined)
    return fail(
      `${quoteText(text)} is not a host name: label ${quoteText(bad, 70)} must be 1 to 63 letters, digits or inner hyphens`,
    );
  if (NUMERIC_LABEL.test(labels.at(-1) ?? ""))
    return fail(
      `${quoteText(text)} ends in a number, which a resolver reads as an address (write the address itself)`,
    );
  // An A-label must decode: what a resolver or a browser makes of it is then the same name.
  if (labels.some((l) => l.startsWith("xn--") && !validALabel(l)))
    return fail(`${quoteText(text)} holds an A-label (xn--) that is not valid punycode`);
  return { ok: true, value: { kind: "name", name } };
}

/** An A-label decodes to Unicode that encodes back to it (a label that does not decode is left as it is). */
function validALabel(label: string): boolean {
  const unicode = domainToUnicode(label);
  return unicode !== label && domainToASCII(unicode) === label;
}

/** A port as written after `:`: 1 to 5 decimal digits, 1 to 65535. */
export function parsePort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * `host[:port]` as in a CONNECT target, a URI's authority or a Host header (IPv6 in brackets). No
 * userinfo. `portRequired`: a CONNECT target must name its port.
 */
export function parseAuthority(
  text: string,
  options: HostOptions & { portRequired?: boolean } = {},
): Parsed<{ host: Host; port?: number }> {
  let hostText = text;
  let portText: string | undefined;
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) return fail(`${quoteText(text)} opens a bracket it does not close`);
    hostText = text.slice(0, close + 1);
    const after = text.slice(close + 1);
    if (after !== "") {
      if (!after.startsWith(":")) return fail(`${quoteText(text)}: only :port may follow the address`);
      portText = after.slice(1);
    }
  } else {
    const colon = text.lastIndexOf(":");
    if (colon >= 0) {
      hostText = text.slice(0, colon);
      portText = text.slice(colon + 1);
      if (hostText.includes(":"))
        return fail(`${quoteText(text)}: an IPv6 address needs brackets ([addr]:port)`);
    }
  }
  if (text.includes("@")) return fail(`${quoteText(text)}: user information (user@host) is not accepted`);
  let port: number | undefined;
  if (portText !== undefined) {
    port = parsePort(portText);
    if (port === undefined) return fail(`${quoteText(portText, 20)} is not a port (1 to 65535)`);
  } else if (options.portRequired) return fail(`${quoteText(text)} needs host:port`);
  const host = parseHost(hostText, options);
  if (!host.ok) return host;
  return { ok: true, value: { host: host.value, ...(port !== undefined ? { port } : {}) } };
}

/** One rule: `data.example.org`, `*.example.org` (subdomains only), either with `:port`; an address. */
export interface HostRule {
  /** The rule in its canonical form, for the record. */
  text: string;
  /** The canonical name, or the address (IPv6 without brackets). */
  host: string;
  wildcard: boolean;
  /** Absent: the default ports (80 and 443). */
  port?: number;
  /** Present for a rule that names an address rather than a name. */
  ip?: 4 | 6;
}

/** Parses `host`, `*.host`, `host:port`, an address (`[v6]` with brackets); undefined when it is none. */
export function parseHostRule(text: string): HostRule | undefined {
  const t = text.trim();
  const wildcard = t.startsWith("*.");
  const parsed = parseAuthority(wildcard ? t.slice(2) : t, { unicode: true });
  if (!parsed.ok) return undefined;
  const { host, port } = parsed.value;
  if (wildcard && host.kind !== "name") return undefined;
  const canonical = `${wildcard ? "*." : ""}${formatHost(host)}${port !== undefined ? `:${port}` : ""}`;
  return {
    text: canonical,
    host: host.kind === "name" ? host.name : host.address,
    wildcard,
    ...(port !== undefined ? { port } : {}),
    ...(host.kind === "ip" ? { ip: host.family } : {}),
  };
}

/** Whether a rule names `host` (ports are the caller's): an address rule only its address, a name rule never an address. */
export function ruleNames(rule: HostRule, host: Host): boolean {
  if (host.kind === "ip") return rule.ip === host.family && rule.host === host.address;
  if (rule.ip) return false;
  return rule.wildcard ? host.name.endsWith(`.${rule.host}`) : host.name === rule.host;
}
