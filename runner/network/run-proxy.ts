// The run's proxy as a sandbox sees it: the proxy listens on a unix socket in a folder of its own,
// that folder is bind-mounted read-only into the sandbox at /run/scifi-net, and a small forwarder
// inside the sandbox's network namespace (which has nothing but loopback) listens on
// 127.0.0.1:3128 and passes each connection to the socket. The proxy variables point there. A
// process that ignores them, unsets them or talks to the socket itself still reaches nothing but
// the proxy: the namespace has no other interface, no route and no DNS server.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ConnectionRecord } from "../memory/history-events.ts";
import { type SandboxSpec, sandboxName } from "../policy/spec.ts";
import type { ProxyLimits } from "./limits.ts";
import { NetworkProxy } from "./proxy.ts";
import { adviseNotListed, emitNetworkRecord, registerRunProxy } from "./records.ts";

/** Where the proxy's folder appears inside the sandbox. */
export const PROXY_MOUNT = "/run/scifi-net";
export const PROXY_PORT = 3128;
export const PROXY_URL = `http://127.0.0.1:${PROXY_PORT}`;

/** Options a backend passes on: the proxy's own resolver configuration and where records go. */
export interface RunProxyOptions {
  /** Names the proxy answers itself (tests; a site pinning its data server). */
  hosts?: Record<string, string[]>;
  /** Whether names not in `hosts` go to the system resolver (default true). */
  systemResolver?: boolean;
  onRecord?: (record: ConnectionRecord) => void;
  /** Caps on what the sandbox can make the proxy hold or record (runner/network/limits.ts). */
  limits?: Partial<ProxyLimits>;
}

/** Where connections that ignore the proxy land (TCP) and where UDP lands (DNS among it), on loopback. */
export const CATCH_TCP_PORT = 3129;
export const CATCH_UDP_PORT = 3130;

/**
 * The capture: in the sandbox's namespace every address is made local and every TCP connection or
 * UDP datagram to anything but loopback is redirected to the forwarder's catch ports, which tell the
 * proxy (one record each: a direct connection, a DNS query, a UDP datagram) and answer the refusal.
 * Run with CAP_NET_ADMIN in the namespace (the Docker forwarder as root before it drops to the
 * sandbox's uid; on Apptainer from the host, entering the instance's namespaces). Needs `ip` and
 * `iptables` in the image; IPv6 is best effort (Docker turns it off in containers).
 */
export const CAPTURE_SH = `set -e
export XTABLES_LOCKFILE=/tmp/.scifi-xtables.lock
for tool in ip iptables; do command -v $tool >/dev/null || { echo "the image has no $tool" >&2; exit 1; }; done
ip route replace local 0.0.0.0/0 dev lo
ipt=iptables
$ipt -t nat -L OUTPUT >/dev/null 2>&1 || ipt=iptables-legacy
$ipt -t nat -A OUTPUT -p tcp ! -d 127.0.0.0/8 -j REDIRECT --to-ports ${CATCH_TCP_PORT}
$ipt -t nat -A OUTPUT -p udp ! -d 127.0.0.0/8 -j REDIRECT --to-ports ${CATCH_UDP_PORT}
if ip -6 route replace local ::/0 dev lo 2>/dev/null; then
  ip6=ip6tables
  $ip6 -t nat -L OUTPUT >/dev/null 2>&1 || ip6=ip6tables-legacy
  $ip6 -t nat -A OUTPUT -p tcp ! -d ::1 -j REDIRECT --to-ports ${CATCH_TCP_PORT} 2>/dev/null || true
  $ip6 -t nat -A OUTPUT -p udp ! -d ::1 -j REDIRECT --to-ports ${CATCH_UDP_PORT} 2>/dev/null || true
fi
echo scifi-net capture on
`;

/**
 * The forwarder: loopback port to the unix socket, byte for byte, plus the catch ports of the
 * capture. Python 3 stdlib. With `--setup UID GID` (Docker, started as root): set up the capture, then
 * drop to UID:GID before serving anything.
 */
export const FORWARDER_PY = `import fcntl, os, socket, struct, subprocess, sys, threading
SOCK = "${PROXY_MOUNT}/proxy.sock"
if len(sys.argv) >= 4 and sys.argv[1] == "--setup":
    r = subprocess.run(["sh", "-c", open("${PROXY_MOUNT}/capture.sh").read()], capture_output=True, text=True)
    print(r.stdout.strip() if r.returncode == 0 else "scifi-net capture off: " + (r.stderr or r.stdout).strip()[-300:], flush=True)
    os.setgroups([])
    os.setgid(int(sys.argv[3]))
    os.setuid(int(sys.argv[2]))
def pipe(a, b):
    # splice through a pipe: the bytes never enter Python (and the GIL is released meanwhile).
    r = w = None
    try:
        r, w = os.pipe()
        try:
            fcntl.fcntl(w, 1031, 1 << 20)
        except OSError:
            pass
        while True:
            n = os.splice(a.fileno(), w, 1 << 20)
            if n == 0:
                break
            while n > 0:
                n -= os.splice(r, b.fileno(), n)
    except OSError:
        pass
    finally:
        for fd in (r, w):
            if fd is not None:
                os.close(fd)
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
def serve(c):
    u = socket.socket(socket.AF_UNIX)
    try:
        u.connect(SOCK)
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pipe, args=(u, c), daemon=True)
    t.start()
    pipe(c, u)
    t.join()
    c.close()
    u.close()
def report(line):
    # One capture record to the proxy; its answer (the refusal) comes back.
    u = socket.socket(socket.AF_UNIX)
    u.settimeout(5)
    data = b""
    try:
        u.connect(SOCK)
        u.sendall(line.encode("ascii", "replace") + b"\\r\\n\\r\\n")
        while len(data) < 8192:
            d = u.recv(8192)
            if not d:
                break
            data += d
    except OSError:
        pass
    finally:
        u.close()
    return data
def caught_tcp(c, v6):
    try:
        if v6:
            d = c.getsockopt(socket.SOL_IPV6, 80, 28)
            ip = socket.inet_ntop(socket.AF_INET6, d[8:24])
        else:
            d = c.getsockopt(socket.SOL_IP, 80, 16)
            ip = socket.inet_ntoa(d[4:8])
        port = struct.unpack(">H", d[2:4])[0]
        c.settimeout(5)
        c.sendall(report("SCIFI-CAPTURE tcp %s %d" % (ip, port)))
    except OSError:
        pass
    finally:
        c.close()
def dns_name(q):
    # The first question's name, or None when the datagram is not a DNS query.
    if len(q) < 17 or q[2] & 0x80 or q[4:6] == b"\\0\\0":
        return None, 0
    i, labels = 12, []
    while i < len(q) and q[i] != 0 and len(labels) < 128:
        n = q[i]
        if n > 63:
            return None, 0
        labels.append(q[i + 1 : i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    if i + 5 > len(q):
        return None, 0
    return ".".join(labels) or ".", i + 5
def caught_udp(s):
    while True:
        try:
            q, peer = s.recvfrom(4096)
        except OSError:
            continue
        name, end = dns_name(q)
        if name is None:
            report("SCIFI-CAPTURE udp - 0")
            continue
        report("SCIFI-CAPTURE dns %s 53" % "".join(ch if ch.isalnum() or ch in ".-_" else "?" for ch in name)[:253])
        # REFUSED, the question echoed: the resolver gives up at once instead of timing out.
        try:
            s.sendto(q[:2] + bytes([0x80 | (q[2] & 0x01), 0x85]) + q[4:6] + b"\\0" * 6 + q[12:end], peer)
        except OSError:
            pass
def start(target, c, *args):
    # A flood that exhausts the threads (the pids limit) refuses that connection, never the forwarder.
    try:
        threading.Thread(target=target, args=(c, *args), daemon=True).start()
    except RuntimeError:
        c.close()
def catch_listeners():
    for fam, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        try:
            t = socket.socket(fam)
            t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            t.bind((host, ${CATCH_TCP_PORT}))
            t.listen(64)
            def accept(t=t, v6=fam == socket.AF_INET6):
                while True:
                    try:
                        c, _ = t.accept()
                    except OSError:
                        continue
                    start(caught_tcp, c, v6)
            threading.Thread(target=accept, daemon=True).start()
            u = socket.socket(fam, socket.SOCK_DGRAM)
            u.bind((host, ${CATCH_UDP_PORT}))
            threading.Thread(target=caught_udp, args=(u,), daemon=True).start()
        except OSError:
            pass
catch_listeners()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", ${PROXY_PORT}))
s.listen(256)
print("scifi-net ready", flush=True)
while True:
    try:
        c, _ = s.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        continue
    start(serve, c)
`;

/** The forwarder in Node (CommonJS), for images without python3 (Apptainer binds the runner's node). */
export const FORWARDER_JS = `"use strict";
const net = require("node:net");
const server = net.createServer({ noDelay: true }, (c) => {
  const u = net.connect("${PROXY_MOUNT}/proxy.sock");
  c.on("error", () => u.destroy());
  u.on("error", () => c.destroy());
  c.pipe(u);
  u.pipe(c);
});
server.listen(${PROXY_PORT}, "127.0.0.1", () => console.log("scifi-net ready"));
`;

export interface RunProxy {
  proxy: NetworkProxy;
  /** Host folder holding proxy.sock and forwarder.py (mounted read-only at PROXY_MOUNT). */
  dir: string;
  /** The proxy variables every process in the sandbox starts with. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts the proxy for a spec with `networkRules`. */
export async function startRunProxy(spec: SandboxSpec, options: RunProxyOptions = {}): Promise<RunProxy> {
  const rules = spec.networkRules;
  if (!rules) throw new Error("startRunProxy: the spec has no network rules");
  const dir = mkdtempSync(join(tmpdir(), "scifi-net-"));
  // The sandbox may run as another uid (scifi as root runs it as sandboxUser): it must reach both files.
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, "forwarder.py"), FORWARDER_PY, { mode: 0o644 });
  writeFileSync(join(dir, "forwarder.cjs"), FORWARDER_JS, { mode: 0o644 });
  writeFileSync(join(dir, "capture.sh"), CAPTURE_SH, { mode: 0o644 });
  const sandbox = { runId: spec.runId, name: sandboxName(spec) };
  const proxy = new NetworkProxy({
    rules,
    ...(options.hosts ? { hosts: options.hosts } : {}),
    ...(options.systemResolver !== undefined ? { systemResolver: options.systemResolver } : {}),
    ...(options.limits ? { limits: options.limits } : {}),
    onRecord: (record) => {
      options.onRecord?.(record);
      emitNetworkRecord(sandbox, record);
    },
    onNotListed: (host, port) => adviseNotListed(sandbox, host, port),
  });
  const socket = join(dir, "proxy.sock");
  try {
    await proxy.listen({ path: socket });
    chmodSync(socket, 0o666);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const unregister = registerRunProxy(sandbox, proxy);
  let closed: Promise<void> | undefined;
  return {
    proxy,
    dir,
    env: proxyEnv(),
    close() {
      unregister();
      closed ??= proxy.close().finally(() => rmSync(dir, { recursive: true, force: true }));
      return closed;
    },
  };
}

/**
 * The capture could not be set up (no `ip`/`iptables` in the image, a kernel without NAT): the
 * sandbox is as closed as before, but what it tries outside the proxy is not recorded. Said once,
 * as a record on the run's history, so nobody reads an empty list as "nothing was tried".
 */
export function noteCaptureOff(rp: RunProxy, why: string): void {
  rp.proxy.note({
    time: new Date().toISOString(),
    kind: "direct",
    host: "-",
    port: 0,
    allowed: false,
    rule: "capture-off",
    reason: `connections, DNS queries and datagrams outside the proxy are refused but not recorded in this sandbox: ${why.slice(0, 300)}`,
    bytesOut: 0,
    bytesIn: 0,
    durationMs: 0,
  });
}

/** Both spellings, since tools read one or the other; NO_PROXY empty so nothing skips the proxy. */
export function proxyEnv(): Record<string, string> {
  return {
    HTTP_PROXY: PROXY_URL,
    HTTPS_PROXY: PROXY_URL,
    http_proxy: PROXY_URL,
    https_proxy: PROXY_URL,
    NO_PROXY: "",
    no_proxy: "",
  };
}
