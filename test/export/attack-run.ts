// The attack suite's run (test/export/attack-*.test.ts, test/open/ax-export-*.pending.ts): one real
// Docker run of the sumfix-hidden task with the scripted attacker agent ax-export-leak.yaml, keyed
// with a site audit key, and copies of its folder that change one thing: a hidden asset whose
// content is text the agent printed (as if the agent had inferred that reference), or a tampered
// tape. The hidden asset only ever reaches the run through its pristine copy and state.json, so a
// copy with another pristine content is the run that reference would have given.
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sealLineHashed, unsealLine } from "../../runner/audit/chain.ts";
import { ExportFailed, runExport } from "../../runner/export/export.ts";
import { runScifi } from "../helpers/cli.ts";
import { adversarialWorkspace, runIn } from "../run/adversarial/workspace.ts";

export const AUDIT_KEY = "ax-export-site-key-0123456789abcdef0123456789abcdef";
/** Printed by the agent; secret only at export time (LAB_LATE_TOKEN). */
export const LATE_SECRET = "late-secret-0a1b2c3d4e";

export interface AttackRun {
  dir: string;
  home: string;
  root: string;
  scratch: string;
}

export async function attackRun(agent = "ax-export-leak.yaml"): Promise<AttackRun> {
  const ws = adversarialWorkspace("sumfix-hidden");
  const before = process.env.SCIFI_AUDIT_KEY;
  process.env.SCIFI_AUDIT_KEY = AUDIT_KEY;
  try {
    const run = await runIn(ws, agent, "docker");
    return {
      dir: run.result.dir,
      home: ws.home,
      root: ws.root,
      scratch: mkdtempSync(join(tmpdir(), "ax-export-")),
    };
  } finally {
    if (before === undefined) delete process.env.SCIFI_AUDIT_KEY;
    else process.env.SCIFI_AUDIT_KEY = before;
  }
}

/** The run's folders go when its tests are done (a failed test's too: they are copies). */
export function removeRun(run: AttackRun | undefined): void {
  if (!run) return;
  for (const dir of [run.root, run.scratch]) rmSync(dir, { recursive: true, force: true });
}

let copies = 0;

/** A copy of the run folder under `scratch`. */
export function copyRun(run: AttackRun, name: string): string {
  const dir = join(run.scratch, `${name}-${copies++}`);
  cpSync(run.dir, dir, { recursive: true });
  return dir;
}

/** A copy of the run whose hidden asset checks/ref.txt holds `content`. */
export function withHidden(run: AttackRun, name: string, content: string): string {
  const dir = copyRun(run, name);
  mkdirSync(join(dir, "pristine", "checks"), { recursive: true });
  writeFileSync(join(dir, "pristine", "checks", "ref.txt"), content);
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
  state.pristine.files.push({
    rel: "checks/ref.txt",
    kind: "asset",
    hidden: true,
    sha256: createHash("sha256").update(content).digest("hex"),
    mode: 0o644,
  });
  writeFileSync(join(dir, "state.json"), JSON.stringify(state));
  return dir;
}

export interface ExportResult {
  code: number;
  stderr: string;
  text: string;
}

/** `scifi export DIR --format F -o FILE` (with the key and the export-time secret); the file's text. */
export async function exportRun(
  run: AttackRun,
  dir: string,
  format: string,
  extra: string[] = [],
): Promise<ExportResult> {
  const out = join(run.scratch, `out-${copies++}.${format}`);
  const formatArgs =
    format === "sft"
      ? ["--per", "call", "--verdict", "passed,failed,blocked,unfinished"]
      : format === "otlp"
        ? ["--content"]
        : [];
  const env = process.env;
  const before = { key: env.SCIFI_AUDIT_KEY, late: env.LAB_LATE_TOKEN };
  env.SCIFI_AUDIT_KEY = AUDIT_KEY;
  env.LAB_LATE_TOKEN = LATE_SECRET;
  try {
    const r = await runScifi(
      run.home,
      ["export", dir, "--format", format, ...formatArgs, ...extra, "-o", out],
      60_000,
    );
    let text = "";
    try {
      text = readFileSync(out, "utf8");
    } catch {
      // refused: nothing written
    }
    return { code: r.code, stderr: r.stderr, text };
  } finally {
    for (const [name, value] of [
      ["SCIFI_AUDIT_KEY", before.key],
      ["LAB_LATE_TOKEN", before.late],
    ] as const)
      if (value === undefined) delete env[name];
      else env[name] = value;
  }
}

/** The tape's lines (without the final empty string). */
export function tapeLines(dir: string): string[] {
  return readFileSync(join(dir, "audit.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "");
}

export function writeTape(dir: string, lines: string[]): void {
  writeFileSync(join(dir, "audit.jsonl"), `${lines.map((l) => l).join("\n")}\n`);
}

export const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/**
 * What a forger without the key can do: reseal every line (new hashes, `prev` chained again, MACs
 * dropped or made with `key`), and move the heads in state.json and the history to the new lines
 * (a head past the new end to the last line).
 */
export function rechain(dir: string, lines: string[], key?: Buffer): void {
  const hashes = new Map<number, string>();
  let prev: string | null = null;
  const out = lines.map((line) => {
    const sealed = unsealLine(line);
    if (!sealed) throw new Error(`not a tape line: ${line.slice(0, 80)}`);
    const record = JSON.parse(sealed.body) as { seq: number; prev: string | null };
    record.prev = prev;
    const { line: resealed, lineHash } = sealLineHashed(JSON.stringify(record), key);
    hashes.set(record.seq, lineHash);
    prev = lineHash;
    return resealed;
  });
  writeTape(dir, out);
  const last = Math.max(...hashes.keys());
  const head = (h: { seq: number }) => {
    const seq = Math.min(h.seq, last);
    return { ...h, seq, hash: hashes.get(seq) };
  };
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
  if (state.auditHead) state.auditHead = head(state.auditHead);
  writeFileSync(join(dir, "state.json"), JSON.stringify(state));
  const history = readFileSync(join(dir, "history.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const event = JSON.parse(l);
      if (event.audit) event.audit = head(event.audit);
      return JSON.stringify(event);
    });
  writeFileSync(join(dir, "history.jsonl"), `${history.join("\n")}\n`);
}

/** The tape cut to `lines` (kept as written, MACs and all) and the heads moved onto its new end. */
export function truncateWithHeads(dir: string, lines: string[]): void {
  writeTape(dir, lines);
  const last = JSON.parse(unsealLine(lines.at(-1) as string)?.body ?? "{}") as { seq: number };
  const head = { seq: last.seq, hash: sha256(lines.at(-1) as string) };
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
  state.auditHead = head;
  writeFileSync(join(dir, "state.json"), JSON.stringify(state));
  const history = readFileSync(join(dir, "history.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => {
      const event = JSON.parse(l);
      if (event.audit && event.audit.seq > last.seq) event.audit = head;
      return JSON.stringify(event);
    });
  writeFileSync(join(dir, "history.jsonl"), `${history.join("\n")}\n`);
}

export interface InProcessResult {
  /** The refusal reasons (empty when exported). */
  refused: string[];
  text: string;
  out: string;
}

/** runExport in this process (with the key and the export-time secret in the environment). */
export async function exportIn(
  run: AttackRun,
  input: string,
  format: "atif" | "sft",
  options: { key?: boolean; allowUnfinished?: boolean } = {},
): Promise<InProcessResult> {
  const out = join(run.scratch, `in-${copies++}.${format}`);
  const before = process.env.LAB_LATE_TOKEN;
  process.env.LAB_LATE_TOKEN = LATE_SECRET;
  try {
    await runExport({
      inputs: [input],
      format,
      home: run.home,
      out,
      ...(options.key === false ? {} : { key: Buffer.from(AUDIT_KEY) }),
      ...(options.allowUnfinished ? { allowUnfinished: true } : {}),
      ...(format === "sft"
        ? { per: "call" as const, filters: { verdict: ["passed", "failed", "blocked", "unfinished"] } }
        : {}),
    });
    return { refused: [], text: readFileSync(out, "utf8"), out };
  } catch (error) {
    if (!(error instanceof ExportFailed)) throw error;
    return {
      refused: error.summary.refused.map((r) => r.reason),
      text: existsSync(out) ? readFileSync(out, "utf8") : "",
      out,
    };
  } finally {
    if (before === undefined) delete process.env.LAB_LATE_TOKEN;
    else process.env.LAB_LATE_TOKEN = before;
  }
}
