// The oracle: at most three high-risk ambiguous phrases in a SAM's To-do and Expectation, each with
// a golden (recommended) and a silver (alternative) reading. The reply is validated by schema and
// against the SAM text; a rejected reply is sent back with the reasons, at most `maxTries` calls.
import { readFileSync } from "node:fs";
import { assertFits, budgetFor } from "../../agents/brief-budget.ts";
import { estimateRequest } from "../../llm/context-window.ts";
import type { Message, Model, ModelResponse } from "../../llm/types.ts";
import { StructuredOutputError } from "../../llm/types.ts";
import type { SamDocument } from "../../sam/types.ts";
import { replyCap } from "../budget.ts";
import { renderPrompt } from "../prompt.ts";
import { extractJson, replyText } from "../reply.ts";
import { locatePhrase, normalise } from "./locate.ts";
import { ORACLE_JSON_SCHEMA, type OracleFinding, type OracleReport, oracleReply } from "./schema.ts";

export interface OracleOptions {
  sam: SamDocument;
  /** The SAM file as the user named it (shown in the report). */
  taskPath: string;
  model: Model;
  runId: string;
  templated?: boolean;
  maxTries?: number;
  rank?: number;
}

export class OracleFailed extends Error {
  override name = "OracleFailed";
  readonly problems: string[];
  constructor(message: string, problems: string[]) {
    super(message);
    this.problems = problems;
  }
}

export const ORACLE_TRIES = 3;

export async function runOracle(options: OracleOptions): Promise<OracleReport> {
  const mode = options.templated ? "templated" : "free";
  const prompt = options.templated ? "./oracle-templated.md" : "./oracle.md";
  const system = renderPrompt(new URL(prompt, import.meta.url), { task: taskText(options.sam) });
  const messages: Message[] = [
    { role: "user", content: [{ type: "text", text: "Find the high-risk ambiguities in the task above." }] },
  ];
  let problems: string[] = [];
  let origin: string | undefined;
  for (let attempt = 1; attempt <= (options.maxTries ?? ORACLE_TRIES); attempt++) {
    let reply: Awaited<ReturnType<typeof ask>>;
    try {
      reply = await ask(options, system, messages, attempt);
    } catch (error) {
      // A retry with no scripted reply left: the reply that did not fit is the cause to report.
      if (attempt === 1 || !(error instanceof Error) || error.name !== "ScriptError") throw error;
      throw new OracleFailed(
        `the oracle's reply${origin ? ` ${origin}` : ""} did not fit (the reply shape: docs/scripted.md); the retry got no answer: ${error.message}`,
        problems,
      );
    }
    const { raw, value, error } = reply;
    origin = reply.origin;
    const checked = error ? { findings: undefined, problems: [error] } : checkReply(value, options.sam);
    if (checked.findings) {
      return { task: options.taskPath, sha256: options.sam.sha256, mode, findings: checked.findings };
    }
    problems = checked.problems;
    messages.push(
      { role: "assistant", content: [{ type: "text", text: raw || "(empty reply)" }] },
      {
        role: "user",
        content: [
          {
            type: "text",
            text: renderPrompt(new URL("./repair.md", import.meta.url), {
              errors: problems.map((p) => `- ${p}`).join("\n"),
            }),
          },
        ],
      },
    );
  }
  throw new OracleFailed(
    `the model gave no valid oracle report in ${options.maxTries ?? ORACLE_TRIES} tries`,
    problems,
  );
}

async function ask(options: OracleOptions, system: string, all: Message[], attempt: number) {
  const rank = options.rank ?? 1;
  const jsonSchema = { name: "oracle_report", schema: ORACLE_JSON_SCHEMA };
  // Past the model's budget the oldest repair rounds go (the ask and the newest round stay).
  const budget = budgetFor(options.model, "control", rank);
  let messages = all;
  while (
    budget !== undefined &&
    messages.length > 3 &&
    estimateRequest({ system, messages, jsonSchema }) > budget
  )
    messages = [messages[0] as Message, ...messages.slice(3)];
  // The system prompt holds the task file: the error names it as the largest part when it is.
  assertFits({ role: "oracle", system, messages, jsonSchema }, budget);
  let response: ModelResponse;
  try {
    response = await options.model.complete({
      role: "oracle",
      kind: "control",
      rank,
      system,
      messages,
      jsonSchema,
      ...(budget !== undefined ? { contextBudget: budget } : {}),
      ...replyCap(options.model, "control", rank, 4000),
      meta: {
        runId: options.runId,
        iteration: attempt,
        sam: { file: options.sam.file, sha256: options.sam.sha256 },
      },
    });
  } catch (error) {
    // The gateway rejects replies that are not JSON of the schema; the model gets the reason back.
    if (error instanceof StructuredOutputError)
      return { raw: error.raw, value: undefined, error: error.message, origin: error.response?.origin };
    throw error;
  }
  const raw = replyText(response);
  const origin = response.origin;
  if (response.json !== undefined) return { raw, value: response.json, error: undefined, origin };
  try {
    return { raw, value: extractJson(raw), error: undefined, origin };
  } catch (error) {
    return { raw, value: undefined, error: (error as Error).message, origin };
  }
}

/** Schema, then the SAM: every phrase must occur in a To-do or Expectation; readings must differ. */
export function checkReply(
  value: unknown,
  sam: SamDocument,
): { findings: OracleFinding[]; problems: [] } | { findings: undefined; problems: string[] } {
  const parsed = oracleReply.safeParse(value);
  if (!parsed.success) {
    return {
      findings: undefined,
      problems: parsed.error.issues.map((i) => `${i.path.join(".") || "reply"}: ${i.message}`),
    };
  }
  const problems: string[] = [];
  const findings: OracleFinding[] = [];
  const seen = new Set<string>();
  parsed.data.findings.forEach((f, i) => {
    const label = `findings.${i} ("${f.phrase}")`;
    const where = locatePhrase(sam, f.phrase);
    if (!where)
      problems.push(`${label}: the phrase does not occur in any To-do or Expectation; copy it exactly`);
    if (seen.has(normalise(f.phrase))) problems.push(`${label}: reported twice; give each phrase once`);
    seen.add(normalise(f.phrase));
    if (normalise(f.golden.rewrite) === normalise(f.silver.rewrite)) {
      problems.push(
        `${label}: golden and silver rewrites are the same; each must allow only its own reading`,
      );
    }
    if (where) findings.push({ ...f, where });
  });
  return problems.length > 0 ? { findings: undefined, problems } : { findings, problems: [] };
}

/** Every file of the SAM (root and referenced sub-SAMs), each under its own header. */
function taskText(sam: SamDocument): string {
  return sam.files
    .map(({ file }) => `<file path="${file}">\n${readFileSync(file, "utf8")}\n</file>`)
    .join("\n\n");
}
