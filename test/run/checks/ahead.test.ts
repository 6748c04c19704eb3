// runAhead (runner/run/checks/ahead.ts): the next check is made ready while the one before runs,
// but no run ever overlaps another, and what was made ready and never ran is discarded.
import { describe, expect, it } from "vitest";
import { awaitedLater, runAhead } from "../../../runner/run/checks/ahead.ts";

const tick = () => new Promise((r) => setTimeout(r, 5));

function recorder() {
  const log: string[] = [];
  let running = 0;
  let overlapped = false;
  return {
    log,
    overlapped: () => overlapped,
    steps: (fail?: string, ahead = (_c: string, _n: string) => true) => ({
      ahead,
      prepare: (item: string) => {
        log.push(`prepare ${item}`);
        return item;
      },
      run: async (item: string) => {
        running++;
        if (running > 1) overlapped = true;
        log.push(`run ${item}`);
        await tick();
        log.push(`ran ${item}`);
        running--;
        if (item === fail) throw new Error(`${item} failed`);
      },
      discard: async (item: string) => {
        log.push(`discard ${item}`);
      },
    }),
  };
}

describe("runAhead", () => {
  it("prepares the next item while the current one runs, and runs them one at a time, in order", async () => {
    const r = recorder();
    await runAhead(["a", "b", "c"], r.steps());
    expect(r.log).toEqual([
      "prepare a",
      "run a",
      "prepare b",
      "ran a",
      "run b",
      "prepare c",
      "ran b",
      "run c",
      "ran c",
    ]);
    expect(r.overlapped()).toBe(false);
  });

  it("prepares at its own turn an item that may not be made ready early (a compare stage)", async () => {
    const r = recorder();
    await runAhead(
      ["a", "compare", "b"],
      r.steps(undefined, (_c, next) => next !== "compare"),
    );
    expect(r.log).toEqual([
      "prepare a",
      "run a",
      "ran a",
      "prepare compare",
      "run compare",
      "prepare b",
      "ran compare",
      "run b",
      "ran b",
    ]);
  });

  it("discards what was made ready when the run before it throws, and rethrows", async () => {
    const r = recorder();
    await expect(runAhead(["a", "b", "c"], r.steps("a"))).rejects.toThrow("a failed");
    expect(r.log).toEqual(["prepare a", "run a", "prepare b", "ran a", "discard b"]);
  });

  it("waits for the running item when making the next one ready throws, then rethrows that", async () => {
    const log: string[] = [];
    const run = runAhead(["a", "b"], {
      ahead: () => true,
      prepare: (item) => {
        if (item === "b") throw new Error("no view for b");
        return item;
      },
      run: async (item) => {
        await tick();
        log.push(`ran ${item}`);
      },
      discard: async (item) => {
        log.push(`discard ${item}`);
      },
    });
    await expect(run).rejects.toThrow("no view for b");
    expect(log).toEqual(["ran a"]);
  });

  it("a promise awaited later rejects then, not as an unhandled rejection now", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", onUnhandled);
    try {
      const later = awaitedLater(Promise.reject(new Error("start failed")));
      await tick();
      await tick();
      expect(unhandled).toEqual([]);
      await expect(later).rejects.toThrow("start failed");
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });
});
