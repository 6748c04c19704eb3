// Every helper call is a small run: a folder runs/<helper>-<time>-<rand>/ whose audit tape records
// each model call through the gateway, like the loop's runs. The helper's own output (the drafted
// SAM, the oracle report) is copied there too, so the record is complete without the user's files.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AuditTape } from "../audit/tape.ts";
import type { Model } from "../llm/types.ts";
import { homePaths, runDir, runFiles } from "../paths.ts";

export type HelperName = "make-task" | "make-skill" | "ask" | "oracle" | "evolve" | "critique";

export interface HelperSession {
  runId: string;
  runDir: string;
  model: Model;
  /** Writes a file into the helper's run folder (its record), returning the path. */
  record(name: string, text: string): string;
  /** The `audit tape: ...` line every helper prints, saying when the replies were scripted. */
  tapeLine(): string;
  close(): Promise<void>;
}

export interface OpenHelperOptions {
  home: string;
  helper: HelperName;
  /** `scripted:FILE`, `replay:RUN`, or a models config; default: the home's models.yaml. */
  modelSpec?: string;
  env?: NodeJS.ProcessEnv;
}

export function helperRunId(helper: HelperName, now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${helper}-${stamp}-${randomBytes(3).toString("hex")}`;
}

/** The model could not be set up (no config, unreadable config or script): a usage error (exit 2). */
export class HelperSetupError extends Error {
  override name = "HelperSetupError";
}

export async function openHelperSession(options: OpenHelperOptions): Promise<HelperSession> {
  const spec = options.modelSpec ?? homePaths(options.home).modelsConfig;
  if (!options.modelSpec && !existsSync(spec)) {
    throw new HelperSetupError(
      `no model configured: ${spec} does not exist; pass --model scripted:FILE or a models config, or create models.yaml (see docs/models.md)`,
    );
  }
  const runId = helperRunId(options.helper);
  const dir = runDir(options.home, runId);
  mkdirSync(dir, { recursive: true });
  const audit = new AuditTape(runFiles(dir).audit, { runId });
  const { createModel } = await import("../llm/create-model.ts");
  let model: Awaited<ReturnType<typeof createModel>>;
  try {
    model = await createModel(spec, audit, options.env ? { env: options.env } : {});
  } catch (error) {
    audit.close();
    throw new HelperSetupError(`cannot set up the model '${spec}': ${(error as Error).message}`);
  }
  return {
    runId,
    runDir: dir,
    model,
    record(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    tapeLine() {
      // A scripted answer must never pass for a model's: said where every helper names its record.
      const scripted = spec.startsWith("scripted")
        ? ` [SCRIPTED model: replies come from ${spec.slice(spec.indexOf(":") + 1)}]`
        : "";
      return `audit tape: ${join(dir, "audit.jsonl")}${scripted}\n`;
    },
    async close() {
      await model.close();
      audit.close();
    },
  };
}

/** Opens the session, or writes why not and returns the usage exit code. */
export async function openOrExplain(
  options: OpenHelperOptions,
  err: (text: string) => void,
): Promise<HelperSession | number> {
  try {
    return await openHelperSession(options);
  } catch (error) {
    if (!(error instanceof HelperSetupError)) throw error;
    err(`scifi ${options.helper}: ${error.message}\n`);
    return 2;
  }
}

/** The options every helper command takes from its flags (and tests, for env and the sinks). */
export interface HelperCommandOptions {
  /** `--model`: `scripted:FILE`, `replay:RUN`, or a models config. */
  model?: string;
  /** `--rank`, as typed. */
  rank?: string;
  /** `--force`: replace a file the command would write that already exists. */
  force?: boolean;
  env?: NodeJS.ProcessEnv;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

/** Where a helper command writes: the sinks it was given (tests), else stdout and stderr. */
export function helperOutput(options: Pick<HelperCommandOptions, "out" | "err">): {
  out: (text: string) => void;
  err: (text: string) => void;
} {
  return {
    out: options.out ?? ((t: string) => process.stdout.write(t)),
    err: options.err ?? ((t: string) => process.stderr.write(t)),
  };
}

/**
 * Runs a helper command's body in an open session, closing it however the body ends. When the
 * session cannot be opened, the reason is written and the usage exit code returned.
 */
export async function withHelperSession(
  options: {
    home: string;
    helper: HelperName;
    model?: string | undefined;
    env?: NodeJS.ProcessEnv | undefined;
  },
  err: (text: string) => void,
  body: (session: HelperSession) => Promise<number>,
): Promise<number> {
  const session = await openOrExplain(
    {
      home: options.home,
      helper: options.helper,
      ...(options.model ? { modelSpec: options.model } : {}),
      ...(options.env ? { env: options.env } : {}),
    },
    err,
  );
  if (typeof session === "number") return session;
  try {
    return await body(session);
  } finally {
    await session.close();
  }
}
