// Run by host-addresses.test.ts inside a network namespace of its own (`unshare --net`, root): the
// proxy there sees the namespace's interfaces as this host's. Prints one JSON line of outcomes.
import { execFileSync } from "node:child_process";
import { connect, createServer } from "node:net";
import { NetworkProxy } from "../../runner/network/proxy.ts";

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: "pipe" });
ip("link", "set", "lo", "up");
ip("link", "add", "scifi-d0", "type", "veth", "peer", "name", "scifi-d1");
ip("link", "set", "scifi-d0", "up");
ip("link", "set", "scifi-d1", "up");
ip("addr", "add", "198.51.100.1/24", "dev", "scifi-d0");

const server = createServer((s) => s.end("hello from this host\n"));
await new Promise<void>((r) => server.listen(8080, "0.0.0.0", () => r()));

const hosts = {
  "self.test": ["198.51.100.1"],
  "neighbour.test": ["198.51.100.9"],
  "late.test": ["203.0.113.5"],
};
const allow = ["self.test:8080", "neighbour.test:8080", "late.test:8080"];
const start = async (allowedPrivateRanges: string[]) => {
  const proxy = new NetworkProxy({
    rules: { allow, deny: [], allowedPrivateRanges },
    hosts,
    systemResolver: false,
  });
  const port = (await proxy.listen({ host: "127.0.0.1", port: 0 })) as number;
  return { proxy, port };
};
const ask = (port: number, host: string) =>
  new Promise<string>((resolve) => {
    const s = connect(port, "127.0.0.1");
    let out = "";
    s.on("data", (d) => (out += d));
    s.on("close", () => resolve(out));
    s.on("error", () => resolve(out));
    s.setTimeout(5000, () => s.destroy());
    s.write(`CONNECT ${host}:8080 HTTP/1.1\r\n\r\n`);
  });
const rule = (answer: string) =>
  /^HTTP\/1.1 200/.test(answer)
    ? answer.includes("hello from this host")
      ? "reached"
      : "allowed"
    : /^HTTP\/1.1 502/.test(answer)
      ? "allowed-unreachable"
      : (/X-Scifi-Refused: (\S+)/.exec(answer)?.[1] ?? answer.slice(0, 80));

const strict = await start([]);
const out: Record<string, string> = {};
out.self = rule(await ask(strict.port, "self.test"));
out.neighbour = rule(await ask(strict.port, "neighbour.test"));
out.lateBefore = rule(await ask(strict.port, "late.test"));
ip("addr", "add", "203.0.113.5/32", "dev", "scifi-d0");
out.lateAfter = rule(await ask(strict.port, "late.test"));
const listed = await start(["198.51.100.1/32"]);
out.selfListed = rule(await ask(listed.port, "self.test"));
out.neighbourListed = rule(await ask(listed.port, "neighbour.test"));
await strict.proxy.close();
await listed.proxy.close();
server.close();
console.log(JSON.stringify(out));
