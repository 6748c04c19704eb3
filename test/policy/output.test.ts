// Output capping and timeout helpers shared by every backend.
import { describe, expect, it } from "vitest";
import { CappedBuffer, endedByTimeout, toArgv, withTimeout } from "../../runner/sandbox/output.ts";
import { TRUNCATION_MARKER } from "../../runner/sandbox/types.ts";

describe("sandbox output helpers", () => {
  it("keeps bytes up to the cap and marks what it dropped", () => {
    const b = new CappedBuffer(5);
    b.push(Buffer.from("abc"));
    expect(b.truncated).toBe(false);
    b.push(Buffer.from("defg"));
    b.push(Buffer.from("h"));
    expect(b.truncated).toBe(true);
    expect(b.bytes().toString()).toBe("abcde");
    expect(b.text()).toBe(`abcde${TRUNCATION_MARKER}`);
    const exact = new CappedBuffer(3);
    exact.push(Buffer.from("abc"));
    expect(exact.text()).toBe("abc");
  });

  it("runs strings through sh and refuses an empty argv", () => {
    expect(toArgv("echo hi")).toEqual(["sh", "-c", "echo hi"]);
    expect(toArgv(["ls", "-l"])).toEqual(["ls", "-l"]);
    expect(() => toArgv([])).toThrow("exec: the argv is empty");
  });

  it("wraps in timeout -k and trusts timeout exit codes only after the deadline", () => {
    expect(withTimeout(["make"], 1500)).toEqual(["timeout", "-k", "2s", "1.500s", "make"]);
    expect(endedByTimeout(124, 1500, 1500)).toBe(true);
    expect(endedByTimeout(137, 3600, 1500)).toBe(true);
    expect(endedByTimeout(137, 200, 1500)).toBe(false);
    expect(endedByTimeout(1, 5000, 1500)).toBe(false);
  });
});
