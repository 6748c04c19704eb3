// Prints `.ci/run`'s timing table: each step's wall time (from the steps file .ci/steps.sh writes)
// and the slowest test files (from the lines scripts/ci-file-times.ts appends). Runs at the end of
// CI, also when it failed, so it never throws on a missing or half-written file: it says so instead.
// Usage: node scripts/ci-table.ts STEPS_TSV TIMES_JSONL [END_EPOCH_SECONDS]
import { readFileSync } from "node:fs";
import type { FileTime } from "./ci-file-times.ts";

/** One line of the steps file: name, start and end (epoch seconds; end 0 while running), status, mode. */
export interface Step {
  name: string;
  start: number;
  end: number;
  status: string;
  /** "fg": .ci/run waited on it; "bg": it ran alongside other steps. */
  mode: "fg" | "bg";
}

export const SLOWEST = 15;

/** Parses the steps file; a line that does not parse is skipped (a step killed while writing). */
export function parseSteps(text: string): Step[] {
  const steps: Step[] = [];
  for (const line of text.split("\n")) {
    const [name, start, end, status, mode] = line.split("\t");
    if (!name || !start || end === undefined || !status) continue;
    const s = Number(start);
    const e = Number(end);
    if (!Number.isFinite(s) || !Number.isFinite(e)) continue;
    steps.push({ name, start: s, end: e, status, mode: mode === "bg" ? "bg" : "fg" });
  }
  return steps;
}

/** Parses the per-file times; a torn last line (the run was killed mid-write) is skipped. */
export function parseTimes(text: string): FileTime[] {
  const times: FileTime[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const t = JSON.parse(line) as Partial<FileTime>;
      if (typeof t.file === "string" && typeof t.ms === "number") {
        const time: FileTime = { file: t.file, ms: t.ms, state: String(t.state ?? "?") };
        if (typeof t.inside === "string") time.inside = t.inside;
        times.push(time);
      }
    } catch {
      // torn line: ignore
    }
  }
  return times;
}

/** m:ss, or h:mm:ss from an hour on. */
export function clock(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

function utc(epoch: number): string {
  return new Date(epoch * 1000).toISOString().slice(11, 19);
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [fmt(header), ...rows.map(fmt)];
}

/** The steps table, by start; a step still running at `now` (CI failed or was stopped) counts up to `now`. */
export function stepsTable(steps: Step[], now: number): string[] {
  if (steps.length === 0) return ["(no step started)"];
  // Parallel steps write their line when they end: list them by start instead.
  const rows = [...steps]
    .sort((a, b) => a.start - b.start)
    .map((s) => {
      const end = s.end > 0 ? s.end : now;
      return [s.name, utc(s.start), clock(end - s.start), s.mode === "bg" ? "parallel" : "", s.status];
    });
  const first = Math.min(...steps.map((s) => s.start));
  rows.push(["total (first start to end)", utc(first), clock(now - first), "", ""]);
  return table(["step", "start", "wall", "", "status"], rows);
}

/** The `limit` slowest files, slowest first, with how many files ran and their summed time. */
export function slowestTable(times: FileTime[], limit = SLOWEST): string[] {
  if (times.length === 0) return ["(no test file finished: no per-file times)"];
  const sorted = [...times].sort((a, b) => b.ms - a.ms || a.file.localeCompare(b.file));
  const sum = times.reduce((acc, t) => acc + t.ms, 0) / 1000;
  const rows = sorted.slice(0, limit).map((t) => [clock(t.ms / 1000), t.state, t.file]);
  return [
    `${Math.min(limit, times.length)} slowest of ${times.length} test files (summed ${clock(sum)}; workers overlap, so the sum exceeds the tests step)`,
    ...table(["wall", "state", "file"], rows),
  ];
}

function readOr(path: string | undefined): string {
  if (!path) return "";
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}

/** Files that ran inside another (the Apptainer harness's inner suites), grouped by that file. */
export function innerTables(times: FileTime[], limit = SLOWEST): string[] {
  const hosts = [...new Set(times.flatMap((t) => (t.inside ? [t.inside] : [])))].sort();
  return hosts.flatMap((host) => {
    const inner = times.filter((t) => t.inside === host);
    const [title, ...rest] = slowestTable(inner, limit);
    return [
      "",
      `${title?.replace(/ \(summed.*/, "")} inside ${host} (one at a time; part of its time)`,
      ...rest,
    ];
  });
}

export function report(stepsText: string, timesText: string, now: number): string {
  const times = parseTimes(timesText);
  return [
    "==> CI timing",
    ...stepsTable(parseSteps(stepsText), now),
    "",
    ...slowestTable(times.filter((t) => !t.inside)),
    ...innerTables(times),
  ].join("\n");
}

if (import.meta.main) {
  const [stepsPath, timesPath, end] = process.argv.slice(2);
  const now = end ? Number(end) : Math.floor(Date.now() / 1000);
  console.log(report(readOr(stepsPath), readOr(timesPath), now));
}
