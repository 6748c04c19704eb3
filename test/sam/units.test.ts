import { describe, expect, it } from "vitest";
import { durationSuggestion, parseDuration, parseSize, parseUsd } from "../../runner/sam/units.ts";

describe("units", () => {
  it.each([
    ["30min", "30m"],
    ["2 hours", "2h"],
    ["1hr30mins", "1h30m"],
    ["45sec", "45s"],
    ["1day", "1d"],
  ])("a duration in words %j: did you mean %j", (text, suggestion) => {
    expect(durationSuggestion(text)).toBe(suggestion);
  });

  it.each(["3 weeks", "30m", "soon"])("no suggestion for %j", (text) => {
    expect(durationSuggestion(text)).toBeUndefined();
  });

  it.each([
    ["90m", 5400],
    ["2h", 7200],
    ["1h30m", 5400],
    ["1h 30m", 5400],
    ["45s", 45],
    ["1d", 86400],
    ["1.5h", 5400],
    // The clock forms `scifi submit --time` takes.
    ["1:30:00", 5400],
    ["0:00:45", 45],
    ["1-02:00:00", 93600],
  ])("duration %s = %i s", (text, seconds) => {
    expect(parseDuration(text)).toBe(seconds);
  });

  it.each(["90", "2 hours", "h", "", "0m", "1x", "-5m", "1:30", "1:75:00", "0:00:00"])(
    "rejects duration %j",
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  it.each([
    ["4G", 4 * 1024 ** 3],
    ["512Mi", 512 * 1024 ** 2],
    ["2GiB", 2 * 1024 ** 3],
    ["100MB", 100 * 1024 ** 2],
    ["1.5T", 1.5 * 1024 ** 4],
    ["64k", 64 * 1024],
    ["1024B", 1024],
  ])("size %s = %i bytes", (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each(["512", "4 gigs", "G", "4X", "0G"])("rejects size %j", (text) => {
    expect(parseSize(text)).toBeUndefined();
  });

  it("money in USD", () => {
    expect([parseUsd(5), parseUsd("2.50"), parseUsd("$3"), parseUsd("3 USD")]).toEqual([5, 2.5, 3, 3]);
    expect([parseUsd(-1), parseUsd("ten"), parseUsd("3 EUR")]).toEqual([undefined, undefined, undefined]);
  });
});
