// AE-8b (attacker session on AE-8, written from docs/eval.md, docs/loop.md "A sandbox that dies",
// docs/sandbox.md): what a failing work agent did inside its sandbox to turn its failure into an
// infrastructure `error` (no verdict, cause `sandbox`, a crash) and that HELD on Docker (root-run
// scifi): every run below ends with a verdict, the run never throws, no death is counted as one from
// outside, and `scifi eval` would count the trial a failure (or, for the honest control, a pass).
// Promise (docs/eval.md): "An agent cannot make its own failure an `error` by ending its sandbox";
// docs/loop.md: "This never ends the run ... a check whose sandbox the agent's code ends fails".
// What broke is in test/open/ae8b-*.pending.ts (AE-8b-1..3).
import { beforeAll, describe, expect, it } from "vitest";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";
import { evalStatus, type Probe, probe } from "./ae8b-probe.ts";

const OK = "echo ok > out.txt; printf 'echo ok\\n' > run.sh; ";

function judged(p: Probe, status: "pass" | "fail"): void {
  expect(p.thrown).toBeUndefined();
  expect(p.history.some((e) => e.type === "verdict")).toBe(true);
  expect(p.history.some((e) => e.type === "run_end")).toBe(true);
  expect(p.history.filter((e) => e.type === "sandbox_died" && e.inside !== true)).toEqual([]);
  expect(p.result?.outcome.cause).toBeUndefined();
  expect(evalStatus(p)).toBe(status);
}

describe.skipIf(!hasEngine("docker"))(
  "AE-8b: what a failing agent does in its sandbox is judged (docker)",
  () => {
    beforeAll(() => ensureImage(), 1_800_000);

    it("a fork bomb left running across calls fails its calls, not the run", async () => {
      const bomb =
        "setsid sh -c 'b(){ b & b & wait; }; b' </dev/null >/dev/null 2>&1 & sleep 2; echo started";
      judged(await probe({ work: [bomb, "echo second-call"] }), "fail");
    }, 120_000);

    it("chmod 000 of the task folder's root: the checks fail (root runner)", async () => {
      judged(await probe({ work: [`${OK} chmod 000 /task`] }), "fail");
    }, 120_000);

    it("a process that drops the exec's marker and holds its output past the command's timeout", async () => {
      const p = await probe({
        work: ["setsid env -i /bin/sleep 1000 & exec sleep 100"],
        limits: { bashTimeoutSec: 3 },
      });
      judged(p, "fail");
    }, 120_000);

    it("the agent's code in a check signals everything, forks a bomb, chmods /task 000, fills /tmp", async () => {
      const runSh = [
        "kill -9 -1; kill -TERM 1; kill -9 1",
        "setsid sh -c 'b(){ b & b & wait; }; b' </dev/null >/dev/null 2>&1 &",
        "chmod 000 /task",
        "exec 3>/tmp/f; rm /tmp/f; head -c 900M /dev/zero >&3",
        "echo ok",
      ].join("\n");
      const p = await probe({ work: ["echo ok > out.txt"], runSh, checkTimeout: "6s" });
      judged(p, "fail");
      expect(p.history.filter((e) => e.type === "check")).toHaveLength(2);
    }, 120_000);

    it("the agent's code in a check leaves a marker-less process holding the check's output past its timeout", async () => {
      const p = await probe({
        work: ["echo ok > out.txt"],
        runSh: "setsid env -i /bin/sleep 1000 &\nsleep 100\n",
        checkTimeout: "4s",
      });
      judged(p, "fail");
      expect(p.history.find((e) => e.type === "check")).toMatchObject({ passed: false, timedOut: true });
    }, 120_000);

    it("odd entries (non-UTF-8 and newline names, FIFO, socket, looping and outside links) and a binary flood: an honest run still passes", async () => {
      const py = [
        "import os, socket",
        "os.makedirs(b'odd', exist_ok=True)",
        "open(b'odd/\\xff\\xfe name', 'w').write('x')",
        "open(b'odd/new\\nline', 'w').write('x')",
        "open(b'odd/back\\\\012slash', 'w').write('x')",
        "open(b'odd/' + b'L'*255, 'w').write('x')",
        "os.mkfifo(b'odd/fifo')",
        "s = socket.socket(socket.AF_UNIX); s.bind(b'odd/sock')",
        "os.symlink('/proc/self/root', b'odd/lnk'); os.symlink('odd/loop', b'odd/loop')",
        "os.symlink(b'\\xff', b'odd/\\xfe')",
      ].join("\n");
      const flood =
        "head -c 3000000 /dev/urandom; yes $(printf '\\xff\\x00\\xed\\xa0\\x80') | head -c 2000000";
      const p = await probe({
        work: [`${OK} cat > /tmp/odd.py <<'PY'\n${py}\nPY\npython3 /tmp/odd.py`, flood],
        reviewPass: true,
      });
      judged(p, "pass");
    }, 120_000);

    for (const [what, cmd] of [
      ["a link to /etc", "ln -s /etc hidden"],
      ["a folder chain", "mkdir -p hidden/ref.txt/x; echo x > hidden/ref.txt/x/y"],
      ["a sparse 20 GiB file beside it", "truncate -s 20G big.bin"],
    ] as const) {
      it(`a hidden asset's path made ${what}: the checks' copy and the return of the assets hold`, async () => {
        judged(await probe({ hidden: true, work: [`${OK} ${cmd}`] }), "fail");
      }, 120_000);
    }
  },
);
