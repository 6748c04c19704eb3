// Memory entries under a lock (concurrent processes never interleave), idempotent by id; the
// history tape; and the atomic run checkpoint.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import lockfile from "proper-lockfile";
import { describe, expect, it } from "vitest";
import { appendEntry, entryIds, parseEntries } from "../../runner/memory/entries.ts";
import { cutBack, fileSize, HistoryTape, readHistory } from "../../runner/memory/history.ts";

const run = promisify(execFile);
const entry = (id: string, body: string) => ({
  id,
  time: "2026-11-30T08:00:00.000Z",
  runId: "r1",
  role: "review",
  title: `entry ${id}`,
  body,
});

describe("memory entries", () => {
  it("appends Markdown entries with time, run and role, and skips a repeated entry", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "mem-")), "groups", "g.md");
    expect(await appendEntry(file, entry("r1/it1/review", "first"))).toBe(true);
    expect(await appendEntry(file, { ...entry("r1/it1/review", "first"), time: "later" })).toBe(false);
    expect(await appendEntry(file, entry("r1/it2/review", "second\nline"))).toBe(true);
    expect(readFileSync(file, "utf8")).toBe(
      "<!-- scifi-entry r1/it1/review -->\n### entry r1/it1/review\n_2026-11-30T08:00:00.000Z · run r1 · review_\n\nfirst\n\n" +
        "<!-- scifi-entry r1/it2/review -->\n### entry r1/it2/review\n_2026-11-30T08:00:00.000Z · run r1 · review_\n\nsecond\nline\n\n",
    );
    expect(parseEntries(readFileSync(file, "utf8")).map((e) => e.body)).toEqual(["first", "second\nline"]);
  });

  it("never interleaves records written by concurrent processes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mem-lock-"));
    const file = join(dir, "global.md");
    const writer = join(dir, "writer.ts");
    const entries = new URL("../../runner/memory/entries.ts", import.meta.url).pathname;
    // Each process appends 25 large entries; without the lock, writes of this size interleave.
    writeFileSync(
      writer,
      `import { appendEntry } from ${JSON.stringify(entries)};
const who = process.argv[2];
for (let i = 0; i < 25; i++) {
  await appendEntry(${JSON.stringify(file)}, { id: who + "/" + i, time: "t", runId: who, role: "final_review", title: who + " " + i, body: (who + " ").repeat(20000) + "END" });
}`,
    );
    await Promise.all(
      ["a", "b", "c", "d"].map((who) => run(process.execPath, [writer, who], { timeout: 120_000 })),
    );
    const text = readFileSync(file, "utf8");
    const parsed = parseEntries(text);
    expect(parsed).toHaveLength(100);
    expect(entryIds(text).size).toBe(100);
    for (const e of parsed) {
      const who = e.id.split("/")[0] ?? "";
      expect(e.body.replaceAll(`${who} `, "")).toBe("END");
    }
  }, 120_000);

  it("a writer waits while another holds the lock", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mem-wait-"));
    const file = join(dir, "task.md");
    writeFileSync(file, "");
    const release = await lockfile.lock(file, { realpath: false });
    const writer = join(dir, "writer.ts");
    const entries = new URL("../../runner/memory/entries.ts", import.meta.url).pathname;
    writeFileSync(
      writer,
      `import { appendEntry } from ${JSON.stringify(entries)};
await appendEntry(${JSON.stringify(file)}, { id: "late", time: "t", runId: "r", role: "review", title: "late", body: "b" });`,
    );
    const child = run(process.execPath, [writer], { timeout: 60_000 });
    await new Promise((r) => setTimeout(r, 1500));
    expect(readFileSync(file, "utf8")).toBe("");
    await release();
    await child;
    expect([...entryIds(readFileSync(file, "utf8"))]).toEqual(["late"]);
  }, 60_000);
});

describe("history tape", () => {
  it("numbers events, reads them back, and cuts back to a checkpoint", () => {
    const file = join(mkdtempSync(join(tmpdir(), "hist-")), "history.jsonl");
    const tape = new HistoryTape(file);
    tape.append({ type: "iteration_start", iteration: 1 });
    const checkpoint = fileSize(file);
    tape.append({ type: "iteration_end", iteration: 1, passed: false, reason: "x" });
    expect(readHistory(file).map((e) => [e.seq, e.type])).toEqual([
      [1, "iteration_start"],
      [2, "iteration_end"],
    ]);
    expect(cutBack(file, checkpoint)).toBeGreaterThan(0);
    const reopened = new HistoryTape(file);
    expect(reopened.length).toBe(1);
    expect(reopened.append({ type: "iteration_start", iteration: 2 }).seq).toBe(2);
  });
});
