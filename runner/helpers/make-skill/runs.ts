// Reading the records of finished runs for the skill maker: task memory, history tail, the SAM,
// and what the work agent did (its commands and files, each with how it ended) from the audit tape.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { readTape } from "../../audit/verify.ts";
import { codeSpan, fenceBlock, inlineText } from "../../markdown-quote.ts";
import { homePaths, runFiles } from "../../paths.ts";

export interface RunRecord {
  id: string;
  dir: string;
  sam?: string;
  memory?: string;
  history?: string;
  /** The work agent's tool calls (commands, files) and their outcomes, from the audit tape. */
  actions?: string;
}

/** Characters kept per file: the end of a long memory or history is the most informative part. */
const MAX_CHARS = 24_000;

export class RunNotFound extends Error {
  override name = "RunNotFound";
}

/** A run given as a folder path or as a run id under the home's runs/. */
export function resolveRun(home: string, ref: string): string {
  if (existsSync(ref) && statSync(ref).isDirectory()) return resolve(ref);
  const byId = join(homePaths(home).runs, ref);
  if (existsSync(byId)) return byId;
  const recent = listRuns(home).slice(0, 5);
  throw new RunNotFound(
    `no run '${ref}' (neither a folder nor in ${homePaths(home).runs})${recent.length > 0 ? `; recent runs: ${recent.join(", ")}` : ""}`,
  );
}

function listRuns(home: string): string[] {
  try {
    return readdirSync(homePaths(home).runs).sort().reverse();
  } catch {
    return [];
  }
}

function tail(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, "utf8");
  return text.length <= MAX_CHARS
    ? text
    : `[... ${text.length - MAX_CHARS} earlier characters left out ...]\n${text.slice(-MAX_CHARS)}`;
}

export function readRun(dir: string): RunRecord {
  const files = runFiles(dir);
  const record: RunRecord = { id: dir.split("/").filter(Boolean).at(-1) ?? dir, dir };
  const sam = tail(files.sam);
  const memory = tail(files.memory);
  const history = tail(files.history);
  if (sam !== undefined) record.sam = sam;
  if (memory !== undefined) record.memory = memory;
  if (history !== undefined) record.history = history;
  const actions = workActions(files.audit);
  if (actions !== undefined) record.actions = actions;
  if (memory === undefined && history === undefined) {
    throw new RunNotFound(`${dir} has neither memory.md nor history.jsonl; is it a run folder?`);
  }
  return record;
}

/** Characters kept of the actions list (its end), of one command, and of one outcome. */
const MAX_ACTION_CHARS = 16_000;
const MAX_INPUT_CHARS = 400;
const MAX_OUTCOME_CHARS = 200;

/**
 * The work agent's tool calls in order, one line each: iteration, tool, what it ran or touched,
 * and how it ended (ok, or error with the start of its output). Undefined when the run has no
 * readable tape or no work call. Every field is the agent's (a path, a command, a tool's output,
 * even the tool's name) and is quoted to one Markdown line (codeSpan, inlineText): a path with
 * line breaks must not add a `## Run` or a `### Task memory` to what the drafting model reads.
 */
export function workActions(tapeFile: string): string | undefined {
  if (!existsSync(tapeFile)) return undefined;
  let records: ReturnType<typeof readTape>;
  try {
    records = readTape(tapeFile);
  } catch {
    return undefined;
  }
  const uses: { iteration: number | undefined; id: string; name: string; input: Record<string, unknown> }[] =
    [];
  const results = new Map<string, { content: string; isError: boolean }>();
  for (const record of records) {
    if (record.kind !== "call" || record.role !== "work") continue;
    for (const message of record.request.messages) {
      for (const block of message.content) {
        if (block.type === "tool_result")
          results.set(block.toolUseId, { content: block.content, isError: block.isError === true });
      }
    }
    for (const block of record.response?.content ?? []) {
      if (block.type === "tool_use")
        uses.push({ iteration: record.iteration, id: block.id, name: block.name, input: block.input });
    }
  }
  if (uses.length === 0) return undefined;
  const lines = uses.map((use) => {
    const result = results.get(use.id);
    const outcome = result
      ? `${result.isError ? "error" : "ok"}${result.content.trim() ? `: ${inlineText(cut(oneLine(result.content), MAX_OUTCOME_CHARS))}` : ""}`
      : "(no result recorded)";
    return `- it${use.iteration ?? "?"} ${toolName(use.name)} ${describeInput(use.name, use.input)} -> ${outcome}`;
  });
  // Whole lines from the end (a line cut in the middle could open a code span it never closes).
  let kept = lines.length;
  let chars = 0;
  while (kept > 0 && chars + (lines[kept - 1]?.length ?? 0) + 1 <= MAX_ACTION_CHARS) {
    kept--;
    chars += (lines[kept]?.length ?? 0) + 1;
  }
  const text = lines.slice(kept).join("\n");
  return kept === 0 ? text : `(${kept} earlier calls left out)\n\n${text}`;
}

/**
 * A tool's name as written (`edit_file`: an underscore inside a word marks nothing up), any other
 * name the model made up escaped by inlineText.
 */
function toolName(name: string): string {
  return /^[A-Za-z](?:[A-Za-z0-9_]*[A-Za-z0-9])?$/.test(name) ? name : inlineText(name);
}

function describeInput(name: string, input: Record<string, unknown>): string {
  const short = (text: string) => cut(oneLine(text), MAX_INPUT_CHARS);
  if (typeof input.command === "string") return codeSpan(short(input.command)) || "(empty command)";
  if (typeof input.path === "string") {
    // Not folded: a line break in a name is shown as `\n`, as the name really is.
    const path = codeSpan(cut(input.path, MAX_INPUT_CHARS)) || "(empty path)";
    return name === "edit_file" || name === "write_file" ? `${path} (changed)` : path;
  }
  if (typeof input.claim === "string") return `"${inlineText(short(input.claim))}"`;
  return codeSpan(short(JSON.stringify(input))) || "(no input)";
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** At most `max` code points (never half of one), `…` where cut. */
function cut(text: string, max: number): string {
  const points = [...text];
  return points.length <= max ? text : `${points.slice(0, max).join("")}…`;
}

export function renderRuns(runs: readonly RunRecord[]): string {
  return runs
    .map((r) =>
      [
        `## Run ${inlineText(r.id)}`,
        r.sam ? `### Task (SAM)\n\n${r.sam.trim()}` : "",
        r.memory ? `### Task memory\n\n${r.memory.trim()}` : "### Task memory\n\n(none)",
        r.actions
          ? `### What the work agent ran (commands, files, outcomes; from the audit tape)\n\n${r.actions.trim()}`
          : "",
        r.history
          ? `### History tape\n\n${fenceBlock(r.history.trim(), "jsonl")}`
          : "### History tape\n\n(none)",
      ]
        .filter(Boolean)
        .join("\n\n"),
    )
    .join("\n\n");
}
