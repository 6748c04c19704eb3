// The scripted model's YAML script: per-role queues of replies, each remembered with its line so
// every error can name `file:line`. Format reference: docs/scripted.md (generated from these schemas).
import { readFileSync } from "node:fs";
import { isMap, isScalar, isSeq, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { ENDING, type Ending, type EndsRun } from "../../run-ending.ts";
import { ModelError } from "../types.ts";

export const SCRIPT_ROLES = [
  "prescan",
  "work",
  "review",
  "final_review",
  "make_task",
  "make_skill",
  "ask",
  "oracle",
  "evolve",
  "tracer",
  "critique",
] as const;

/** The script's one top-level setting beside the roles: the model's context window in tokens. */
export const CONTEXT_WINDOW_KEY = "context_window";

const expectItem = z.union([z.string(), z.strictObject({ regex: z.string() })]);

export const ReplySchema = z
  .strictObject({
    text: z.string().optional().describe("Reply text."),
    thinking: z
      .string()
      .optional()
      .describe(
        "A thinking block sent before the text (signed like the real API; a modified block sent back is rejected).",
      ),
    tool_calls: z
      .array(
        z.strictObject({
          name: z.string().min(1).describe("A tool of the role (see the tools below)."),
          input: z.record(z.string(), z.unknown()).default({}).describe("The tool's input fields."),
        }),
      )
      .optional()
      .describe("Tool calls: the model asks the agent to run these, in order."),
    json: z
      .unknown()
      .optional()
      .describe("Structured output, sent as the reply text JSON-encoded: the role's reply schema below."),
    usage: z
      .strictObject({
        input: z.number().int().nonnegative().optional(),
        output: z.number().int().nonnegative().optional(),
        cache_read: z.number().int().nonnegative().optional(),
        cache_write: z.number().int().nonnegative().optional(),
        reasoning: z.number().int().nonnegative().optional(),
      })
      .optional()
      .describe("Overrides of the computed token counts."),
    expect: z
      .union([expectItem, z.array(expectItem)])
      .optional()
      .describe(
        "Text, `{regex}`, or a list of them: all must be found in the request's system and messages, else the call fails naming this line.",
      ),
    stop: z
      .enum(["end_turn", "max_tokens", "refusal"])
      .optional()
      .describe("Stop reason (default end_turn)."),
    status: z
      .number()
      .int()
      .min(400)
      .max(599)
      .optional()
      .describe("Fault: answer this HTTP error status instead (e.g. 429, 500, 529)."),
    retry_after: z
      .number()
      .nonnegative()
      .optional()
      .describe("Fault: `retry-after` header in seconds, with `status`."),
    message: z.string().optional().describe("Fault: the error message, with `status`."),
    hang: z
      .literal(true)
      .optional()
      .describe("Fault: accept the request and never answer (the client times out)."),
    malformed: z.literal(true).optional().describe("Fault: answer 200 with a body that is not JSON."),
    delay_ms: z.number().int().nonnegative().optional().describe("Answer after this delay (ms)."),
  })
  .refine((r) => !(r.status !== undefined && (r.hang || r.malformed)), {
    message: "a reply has at most one fault: status, hang or malformed",
  });

export type ScriptReply = z.infer<typeof ReplySchema>;

export interface ScriptEntry {
  reply: ScriptReply;
  line: number;
}

export interface Script {
  file: string;
  /**
   * `context_window:` (tokens): a request whose prompt, or prompt plus `max_tokens`, passes it is
   * refused with the real providers' HTTP 400 (context.ts), before any reply of the script is used.
   */
  contextWindow?: number;
  queues: Map<string, ScriptEntry[]>;
  /** Line of each role key, for "queue exhausted" errors. */
  roleLines: Map<string, number>;
}

/** A script that cannot be used, or a request the script did not expect. Names file:line. */
export class ScriptError extends ModelError implements EndsRun {
  override name = "ScriptError";
  /** In a run, a reply the script cannot give ends it; at setup, a bad script is exit code 2. */
  readonly [ENDING]: Ending = { status: "failed", limit: "agent_reply" };
}

export function loadScript(file: string): Script {
  let source: string;
  try {
    source = readFileSync(file, "utf8");
  } catch (error) {
    throw new ScriptError(`scripted model: cannot read script ${file}: ${(error as Error).message}`);
  }
  return parseScript(source, file);
}

export function parseScript(source: string, file: string): Script {
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { lineCounter });
  const at = (offset: number | undefined) => `${file}:${lineCounter.linePos(offset ?? 0).line}`;
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    throw new ScriptError(`${at(first?.pos[0])}: invalid YAML: ${first?.message}`);
  }
  if (!isMap(doc.contents)) {
    throw new ScriptError(
      `${file}:1: a script is a map of role -> list of replies (roles: ${SCRIPT_ROLES.join(", ")})`,
    );
  }
  const queues = new Map<string, ScriptEntry[]>();
  const roleLines = new Map<string, number>();
  let contextWindow: number | undefined;
  for (const pair of doc.contents.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : "";
    const keyOffset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
    if (key === CONTEXT_WINDOW_KEY) {
      const value = isScalar(pair.value) ? pair.value.value : undefined;
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
        throw new ScriptError(
          `${at(keyOffset)}: ${CONTEXT_WINDOW_KEY} must be a whole number of tokens (at least 1), not ${JSON.stringify(value ?? null)}`,
        );
      contextWindow = value;
      continue;
    }
    if (!(SCRIPT_ROLES as readonly string[]).includes(key)) {
      const hint = didYouMean(key, [...SCRIPT_ROLES, CONTEXT_WINDOW_KEY]);
      throw new ScriptError(
        `${at(keyOffset)}: unknown role '${key}'${hint ? ` (did you mean '${hint}'?)` : ""}; roles: ${SCRIPT_ROLES.join(", ")} (and the setting ${CONTEXT_WINDOW_KEY})`,
      );
    }
    if (!isSeq(pair.value))
      throw new ScriptError(`${at(keyOffset)}: role '${key}' must be a list of replies`);
    roleLines.set(key, lineCounter.linePos(keyOffset ?? 0).line);
    const entries: ScriptEntry[] = [];
    for (const item of pair.value.items) {
      const offset = (item as { range?: [number, number, number] }).range?.[0];
      const raw = (item as { toJSON?: () => unknown }).toJSON?.() ?? item;
      const parsed = ReplySchema.safeParse(raw);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const path = issue?.path.length ? ` at '${issue.path.join(".")}'` : "";
        throw new ScriptError(`${at(offset)}: bad reply for role '${key}'${path}: ${issue?.message}`);
      }
      entries.push({ reply: parsed.data, line: lineCounter.linePos(offset ?? 0).line });
    }
    queues.set(key, entries);
  }
  return { file, queues, roleLines, ...(contextWindow !== undefined ? { contextWindow } : {}) };
}

function didYouMean(word: string, options: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = 3;
  for (const option of options) {
    const d = editDistance(word.toLowerCase(), option);
    if (d < bestDistance) {
      best = option;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0] ?? 0;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j] ?? 0;
      row[j] = Math.min(above + 1, (row[j - 1] ?? 0) + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] ?? 0;
}
