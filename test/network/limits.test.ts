// What a sandbox can make the proxy hold and write, on loopback: connections open at once, the
// request-head deadline, the bytes of unfinished heads, idle tunnels, and records per kind; each cap
// ends in one `flood` record, never in growth. Small caps here; the same code runs with the defaults
// in the Docker flood test (test/network/flood.e2e.test.ts).
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { ConnectionRecord } from "../../runner/memory/history-events.ts";
import { MAX_REASON_LENGTH, type ProxyLimits } from "../../runner/network/limits.ts";
import { NetworkProxy } from "../../runner/network/proxy.ts";

const open: NetworkProxy[] = [];
const servers: Server[] = [];

afterEach(async () => {
  for (const p of open.splice(0)) await p.close();
  for (const s of servers.splice(0)) s.close();
});

async function start(
  limits: Partial<ProxyLimits>,
  records: ConnectionRecord[],
  allow: string[] = [],
  hosts: Record<string, string[]> = {},
): Promise<{ proxy: NetworkProxy; port: number }> {
  const proxy = new NetworkProxy({
    rules: { allow, deny: [], allowedPrivateRanges: ["127.0.0.0/8"] },
    hosts,
    systemResolver: false,
    limits,
    onRecord: (r) => records.push(r),
  });
  open.push(proxy);
  const port = (await proxy.listen({ host: "127.0.0.1", port: 0 })) as number;
  return { proxy, port };
}

/** A client that sends `text` and keeps its side open; `closed` settles when the proxy closes it. */
function client(port: number, text: string): { socket: Socket; closed: Promise<string> } {
  const socket = connect(port, "127.0.0.1");
  let out = "";
  const closed = new Promise<string>((resolve) => {
    socket.on("data", (d) => (out += d));
    socket.on("close", () => resolve(out));
    socket.on("error", () => undefined);
  });
  socket.write(text);
  return { socket, closed };
}

const until = async (what: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
};

const floods = (records: ConnectionRecord[]) => records.filter((r) => r.rule === "flood");

describe("proxy limits", () => {
  it("holds at most maxConnections; the rest are closed at once, with one flood record", async () => {
    const records: ConnectionRecord[] = [];
    const { proxy, port } = await start({ maxConnections: 20, headTimeoutMs: 60_000 }, records);
    const clients = Array.from({ length: 200 }, () => client(port, "GET http://x.test/ HTTP/1.1\r\n"));
    // The 180 over the cap are closed by the proxy while the 20 still wait for their heads.
    let closedCount = 0;
    for (const c of clients) void c.closed.then(() => closedCount++);
    await until(() => closedCount >= 180);
    expect(proxy.stats().open).toBeLessThanOrEqual(20);
    expect(floods(records)).toHaveLength(1);
    expect(floods(records)[0]?.reason).toContain("20 connections open at once");
    expect(proxy.stats().over["20 connections open at once"]).toBeGreaterThanOrEqual(180);
    for (const c of clients) c.socket.destroy();
  });

  it("frees the place of a client that ends before its head is whole, at once", async () => {
    const records: ConnectionRecord[] = [];
    const { proxy, port } = await start({ maxConnections: 5, headTimeoutMs: 60_000 }, records);
    const clients = Array.from({ length: 5 }, () => client(port, "GET http://x.test/ HTTP/1.1\r\n"));
    await until(() => proxy.stats().open === 5);
    for (const c of clients) c.socket.end();
    await until(() => proxy.stats().open === 0, 2000);
    expect(floods(records)).toHaveLength(0);
  });

  it("closes a connection whose head is not whole within the deadline (a byte at a time too)", async () => {
    const records: ConnectionRecord[] = [];
    const { port } = await start({ headTimeoutMs: 300 }, records);
    const slow = client(port, "G");
    const drip = setInterval(() => slow.socket.write("E"), 50);
    const began = Date.now();
    const out = await slow.closed;
    clearInterval(drip);
    expect(Date.now() - began).toBeLessThan(3000);
    expect(out).toMatch(/^HTTP\/1.1 403/);
    expect(out).toContain("X-Scifi-Refused: head-timeout");
    expect(records.at(-1)).toMatchObject({ rule: "head-timeout", allowed: false });
  });

  it("bounds the bytes of unfinished heads all connections hold together", async () => {
    const records: ConnectionRecord[] = [];
    const { proxy, port } = await start(
      { maxHeadBytes: 64 * 1024, maxBufferedBytes: 100 * 1024, headTimeoutMs: 60_000 },
      records,
    );
    const clients = Array.from({ length: 4 }, () =>
      client(port, `GET http://x.test/ HTTP/1.1\r\nX: ${"a".repeat(40_000)}`),
    );
    // 160 KB asked for, 100 KB the cap: at least one is closed, and what is held stays under the cap.
    await Promise.race(clients.map((c) => c.closed));
    expect(floods(records)).toHaveLength(1);
    expect(floods(records)[0]?.reason).toContain(`${100 * 1024} bytes of unfinished request heads`);
    expect(proxy.stats().headBytes).toBeLessThanOrEqual(100 * 1024);
    for (const c of clients) c.socket.destroy();
  });

  it("closes an idle tunnel and records it; a busy one stays", async () => {
    const echo = createServer((s) => s.on("data", (d) => s.write(d)));
    servers.push(echo);
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
    const echoPort = (echo.address() as AddressInfo).port;
    const records: ConnectionRecord[] = [];
    const { port } = await start({ idleTimeoutMs: 400 }, records, [`echo.test:${echoPort}`], {
      "echo.test": ["127.0.0.1"],
    });
    const idle = client(port, `CONNECT echo.test:${echoPort} HTTP/1.1\r\n\r\n`);
    const busy = client(port, `CONNECT echo.test:${echoPort} HTTP/1.1\r\n\r\n`);
    const keep = setInterval(() => busy.socket.write("x"), 100);
    const began = Date.now();
    expect(await idle.closed).toMatch(/^HTTP\/1.1 200/);
    expect(Date.now() - began).toBeGreaterThanOrEqual(350);
    await new Promise((r) => setTimeout(r, 600));
    expect(busy.socket.destroyed).toBe(false);
    clearInterval(keep);
    busy.socket.destroy();
    await busy.closed;
    await until(() => records.length === 2);
    expect(records[0]).toMatchObject({ allowed: true, reason: "closed: no byte either way for 0.4 s" });
    expect(records[1]?.bytesOut).toBeGreaterThan(5);
  });

  it("keeps at most maxRecords refusals, then one flood record; allowed records have their own cap", async () => {
    const echo = createServer((s) => s.end());
    servers.push(echo);
    await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
    const echoPort = (echo.address() as AddressInfo).port;
    const records: ConnectionRecord[] = [];
    const { proxy, port } = await start(
      { maxRecords: { refused: 10, allowed: 5, capture: 10, lookup: 10 } },
      records,
      [`echo.test:${echoPort}`],
      { "echo.test": ["127.0.0.1"] },
    );
    for (let i = 0; i < 30; i++) await client(port, `CONNECT other${i}.test:443 HTTP/1.1\r\n\r\n`).closed;
    // After a flood of refusals an allowed connection is still recorded (its own cap).
    await client(port, `CONNECT echo.test:${echoPort} HTTP/1.1\r\n\r\n`).closed;
    await until(() => records.some((r) => r.allowed));
    expect(records.filter((r) => r.rule === "not-listed")).toHaveLength(10);
    expect(floods(records)).toHaveLength(1);
    expect(records.filter((r) => r.allowed)).toHaveLength(1);
    expect(proxy.records).toHaveLength(12);
    expect(proxy.stats().over["10 records of refused connections"]).toBe(20);
  });

  it("a refused CONNECT with a 60 KB host name leaves a record of bounded size", async () => {
    const records: ConnectionRecord[] = [];
    const { port } = await start({}, records);
    const name = `${"a".repeat(60)}.`.repeat(1000);
    const out = await client(port, `CONNECT ${name}w.example:443 HTTP/1.1\r\n\r\n`).closed;
    expect(out).toMatch(/^HTTP\/1.1 403/);
    expect(out.length).toBeLessThan(2000);
    const r = records.at(-1);
    expect(r).toMatchObject({ rule: "bad-host", allowed: false, host: "" });
    expect(JSON.stringify(r).length).toBeLessThan(MAX_REASON_LENGTH + 400);
    expect(r?.reason).toContain("at most 253 characters");
  });
});
