// `scifi export`: selects runs (run ids or folders, eval ids or folders, then the filters), verifies
// each run's tape as it reads it, and writes one format. Nothing is written where a run is refused
// (a tape that does not verify, a hidden asset's content in what would leave): the output goes to a
// temporary file first and takes its place only when every selected run was exported (or, with
// `skipRefused`, when the refused ones are named and left out).
import { closeSync, openSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeAtomicWith } from "../atomic-write.ts";
import { Redactor } from "../audit/redact.ts";
import { writeAtif } from "./atif.ts";
import { ExportGuard, ExportRefused } from "./guard.ts";
import { pairGroups, writePreference } from "./preference.ts";
import { writeSft } from "./sft.ts";
import { Sink, Spool } from "./sink.ts";
import {
  ExportInputError,
  type ExportRun,
  hiddenAssets,
  hostPaths,
  resolveInputs,
  trialMismatch,
} from "./source.ts";
import { TapeRefused } from "./tape-stream.ts";

export const FORMATS = ["atif", "sft", "preference", "otlp"] as const;
export type ExportFormat = (typeof FORMATS)[number];

export interface ExportFilters {
  verdict?: string[];
  /** Substring of the run's model spec (or the trial's model). */
  model?: string;
  role?: string[];
  task?: string[];
  /** Runs started at or after / before this time (ISO date or time). */
  since?: string;
  until?: string;
  evalId?: string;
}

export interface ExportOptions {
  inputs: string[];
  format: ExportFormat;
  home: string;
  /** Output file; absent: `write` receives the bytes (stdout). */
  out?: string;
  /** POST OTLP to this endpoint instead of writing a file. */
  endpoint?: string;
  filters?: ExportFilters;
  key?: Buffer;
  /** OTLP: message content as attributes. */
  content?: boolean;
  /** SFT: a row per conversation (default) or per call. */
  per?: "conversation" | "call";
  skipRefused?: boolean;
  /** Export runs whose tape has no run_end record (unfinished, or older tapes): tape-stream.ts. */
  allowUnfinished?: boolean;
  redactor?: Redactor;
  write?: (bytes: Buffer) => void;
}

export interface ExportSummary {
  format: ExportFormat;
  exported: { runId: string; verdict: string; items: number }[];
  refused: { runId: string; dir: string; reason: string }[];
  /** Items written: trajectories, rows, pairs or spans. */
  items: number;
  redactions: number;
  out?: string;
}

/** Raised when the export as a whole is refused; `summary` says which runs and why. */
export class ExportFailed extends Error {
  override name = "ExportFailed";
  readonly summary: ExportSummary;
  constructor(message: string, summary: ExportSummary) {
    super(message);
    this.summary = summary;
  }
}

const VERSION = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

export function selectRuns(runs: ExportRun[], filters: ExportFilters = {}): ExportRun[] {
  const day = (t: string) =>
    /^\d{4}-\d{2}-\d{2}$/.test(t) ? `${t}T00:00:00.000Z` : new Date(t).toISOString();
  return runs.filter((run) => {
    if (filters.verdict?.length && !filters.verdict.includes(run.verdict)) return false;
    if (filters.model && !`${run.modelSpec} ${run.trial?.model ?? ""}`.includes(filters.model)) return false;
    if (filters.task?.length && !filters.task.includes(run.task)) return false;
    if (filters.evalId && run.trial?.evalId !== filters.evalId) return false;
    if (filters.since && !(run.startedAt >= day(filters.since))) return false;
    if (filters.until && !(run.startedAt < day(filters.until))) return false;
    return true;
  });
}

export async function runExport(options: ExportOptions): Promise<ExportSummary> {
  const filters = options.filters ?? {};
  const all = resolveInputs(options.inputs, options.home).map((run) =>
    options.allowUnfinished ? { ...run, allowUnfinished: true } : run,
  );
  // Training rows teach what passed unless asked otherwise (every row carries its verdict).
  const effective =
    options.format === "sft" && !filters.verdict ? { ...filters, verdict: ["passed"] } : filters;
  const runs = selectRuns(dedupe(all), effective);
  const summary: ExportSummary = {
    format: options.format,
    exported: [],
    refused: [],
    items: 0,
    redactions: 0,
  };
  if (runs.length === 0)
    throw new ExportFailed(
      `no run matches: ${all.length} named, none left after the filters (${JSON.stringify(effective)})`,
      summary,
    );
  const redactor = options.redactor ?? new Redactor();
  const guards = new Map<string, ExportGuard>();
  const guardOf = (run: ExportRun) => {
    let guard = guards.get(run.dir);
    if (!guard) {
      const mismatch = trialMismatch(run);
      if (mismatch) throw new ExportInputError(mismatch);
      guard = new ExportGuard({ redactor, paths: hostPaths(run, options.home), hidden: hiddenAssets(run) });
      guards.set(run.dir, guard);
    }
    return guard;
  };
  const spool = new Spool();
  const target = join(spool.dir, "out");
  const fd = openSync(target, "wx", 0o600);
  const out = new Sink(fd);
  const roles = filters.role ?? [];
  const refuse = (run: ExportRun, error: unknown) => {
    if (
      !(error instanceof TapeRefused || error instanceof ExportRefused || error instanceof ExportInputError)
    )
      throw error;
    summary.refused.push({ runId: run.runId, dir: run.dir, reason: error.message });
  };
  try {
    if (options.format === "preference") {
      const groups = pairGroups(runs).filter((g) => g.pass.length > 0 && g.fail.length > 0);
      if (groups.length === 0)
        throw new ExportFailed(
          "no task and variant has both a passing and a failing trial among the selected eval trials: preference pairs need both (name an eval id or folder)",
          summary,
        );
      // Each run is verified (and guarded) before any pair of it is written.
      for (const group of groups)
        for (const run of [...group.pass, ...group.fail]) {
          try {
            const nothing = openSync("/dev/null", "w");
            try {
              await writeSft(run, guardOf(run), new Sink(nothing), {
                per: "conversation",
                roles,
                ...keyOf(options),
              });
            } finally {
              closeSync(nothing);
            }
          } catch (error) {
            refuse(run, error);
          }
        }
      const refusedDirs = new Set(summary.refused.map((r) => r.dir));
      if (summary.refused.length > 0 && !options.skipRefused) throw refusedError(summary);
      const kept = groups.map((g) => ({
        ...g,
        pass: g.pass.filter((r) => !refusedDirs.has(r.dir)),
        fail: g.fail.filter((r) => !refusedDirs.has(r.dir)),
      }));
      summary.items = await writePreference(kept, guardOf, out, { roles, ...keyOf(options) });
      for (const g of kept)
        for (const run of [...g.pass, ...g.fail])
          summary.exported.push({ runId: run.runId, verdict: run.verdict, items: 0 });
    } else if (options.format === "otlp") {
      // Loaded only here: the OpenTelemetry SDK is a large import the other formats do not need.
      const { OtlpBuilder } = await import("./otlp.ts");
      const builder = new OtlpBuilder({ content: options.content === true, version: VERSION });
      for (const run of runs) {
        try {
          const calls = await builder.addRun(run, guardOf(run), { roles, ...keyOf(options) });
          summary.exported.push({ runId: run.runId, verdict: run.verdict, items: calls });
        } catch (error) {
          refuse(run, error);
        }
      }
      if (summary.refused.length > 0 && !options.skipRefused) throw refusedError(summary);
      const bytes = builder.json();
      const text = Buffer.from(bytes).toString("utf8");
      for (const run of runs)
        if (!summary.refused.some((r) => r.dir === run.dir)) guardOf(run).check(text, "the OTLP request");
      summary.items = builder.spans().length;
      if (options.endpoint) await builder.post(options.endpoint);
      else out.write(text);
    } else {
      for (const run of runs) {
        // With --skip-refused each run goes to its own spool first, so a refusal found at its
        // tape's last line leaves no part of it; otherwise a refusal discards the whole output.
        const part = options.skipRefused ? spool.part() : undefined;
        const sink = part ?? out;
        try {
          let items = 1;
          if (options.format === "atif")
            await writeAtif(run, guardOf(run), spool, sink, { roles, version: VERSION, ...keyOf(options) });
          else
            items = await writeSft(run, guardOf(run), sink, {
              per: options.per ?? "conversation",
              roles,
              ...keyOf(options),
            });
          part?.copyTo(out);
          summary.items += items;
          summary.exported.push({ runId: run.runId, verdict: run.verdict, items });
        } catch (error) {
          refuse(run, error);
        }
      }
      if (summary.refused.length > 0 && !options.skipRefused) throw refusedError(summary);
    }
    if (summary.exported.length === 0) throw refusedError(summary);
    out.flush();
    closeSync(fd);
    summary.redactions = [...guards.values()].reduce((n, g) => n + g.redactions, 0);
    if (options.endpoint) return summary;
    if (options.out) {
      renameOrCopy(target, options.out);
      summary.out = options.out;
    } else options.write?.(readFileSync(target));
    return summary;
  } finally {
    try {
      closeSync(fd);
    } catch {
      // closed above
    }
    spool.dispose();
  }
}

function keyOf(options: ExportOptions): { key?: Buffer } {
  return options.key ? { key: options.key } : {};
}

function refusedError(summary: ExportSummary): ExportFailed {
  const lines = summary.refused.map((r) => `  ${r.runId}: ${r.reason}`).join("\n");
  return new ExportFailed(
    `${summary.refused.length} run(s) refused, nothing written${summary.refused.length > 0 ? ` (--skip-refused exports the others):\n${lines}` : ""}`,
    summary,
  );
}

function dedupe(runs: ExportRun[]): ExportRun[] {
  const seen = new Set<string>();
  return runs.filter((r) => {
    if (seen.has(r.dir)) return false;
    seen.add(r.dir);
    return true;
  });
}

/** Puts the finished file in place (a rename where it can, an atomic copy across file systems). */
function renameOrCopy(from: string, to: string): void {
  try {
    renameSync(from, to);
  } catch {
    writeAtomicWith(to, (fd) => new Sink(fd).copyFrom(from), {
      tempFile: `${to}.scifi-export-${process.pid}`,
    });
    rmSync(from, { force: true });
  }
}
