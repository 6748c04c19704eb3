// Attack on issue 41's window from the server (attacker a41c; runner/llm/context-window.ts
// serverWindow). Fixed.
// Doc promise: docs/models.md "Context windows": the window is "the server's own word: `GET
// {baseURL}/models` ... asked once at start (3 s timeout)"; issue 41: the night's runner RSS stays
// under 300 MB; trust.md rule 4 ("no unbounded reads").
// What happened: serverWindow reads the whole answer with `response.json()` before looking at it.
// A server (or a proxy in front of it, or a wrong `baseURL` pointing at something that streams)
// whose `/models` answer never ends is read for the whole 3 s: on this 2-core machine the runner's
// process grew by about 1.8 GB before the timeout gave up (a login node's per-user memory limit
// kills it there), and the answer it reads is thrown away anyway.
// Fixed: serverWindow reads the body through a capped reader (MODELS_ANSWER_MAX_BYTES, 8 MiB) and
// gives up past it, as on a timeout.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, expect, it } from "vitest";
import { serverWindow } from "../../runner/llm/context-window.ts";

let server: Server | undefined;
afterEach(() => {
  server?.closeAllConnections();
  server?.close();
});

it("a41c: an endless /models answer is read only as far as a models listing can go", async () => {
  const MiB = 1 << 20;
  let sent = 0;
  const listening = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.write('{"data":[{"id":"m","pad":"');
    const chunk = "x".repeat(MiB);
    // At most 256 MiB (the test's own memory), as fast as the runner reads it.
    const pump = () => {
      while (sent < 256 * MiB) {
        sent += MiB;
        if (!res.write(chunk)) return;
      }
    };
    res.on("drain", pump);
    pump();
  });
  server = listening;
  const url = await new Promise<string>((resolve) =>
    listening.listen(0, "127.0.0.1", () =>
      resolve(`http://127.0.0.1:${(listening.address() as AddressInfo).port}`),
    ),
  );
  expect(await serverWindow(`${url}/v1`, "m", "key")).toBeUndefined();
  expect(sent / MiB).toBeLessThan(32);
}, 30_000);
