// The run's proxy as a sandbox sees it: the proxy listens on a unix socket in a folder of its own,
// that folder is bind-mounted read-only into the sandbox at /run/scifi-net, and a small forwarder
// inside the sandbox's network namespace (which has nothing but loopback) listens on
// 127.0.0.1:3128 and passes each connection to the socket. The proxy variables point there. A
// process that ignores them, unsets them or talks to the socket itself still reaches nothing but
// the proxy: the namespace has no other interface, no route and no DNS server.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxSpec } from "../policy/spec.ts";
import { type ConnectionRecord, NetworkProxy } from "./proxy.ts";
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
}

/** The forwarder: loopback port to the unix socket, byte for byte, nothing else. Python 3 stdlib. */
export const FORWARDER_PY = `import fcntl, os, socket, threading
SOCK = "${PROXY_MOUNT}/proxy.sock"
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
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", ${PROXY_PORT}))
s.listen(256)
print("scifi-net ready", flush=True)
while True:
    c, _ = s.accept()
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
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
  const proxy = new NetworkProxy({
    rules,
    ...(options.hosts ? { hosts: options.hosts } : {}),
    ...(options.systemResolver !== undefined ? { systemResolver: options.systemResolver } : {}),
    onRecord: (record) => {
      options.onRecord?.(record);
      emitNetworkRecord(spec.runId, record);
    },
    onNotListed: (host, port) => adviseNotListed(spec.runId, host, port),
  });
  const socket = join(dir, "proxy.sock");
  try {
    await proxy.listen({ path: socket });
    chmodSync(socket, 0o666);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const unregister = registerRunProxy(spec.runId, proxy);
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
