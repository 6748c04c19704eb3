// docs/scripted.md, generated from the zod schemas the code validates with: the script's reply
// fields (runner/llm/scripted/script.ts), each role's reply (the agents' and helpers' schemas) and
// each tool's input (the tools' own schemas, exactly as the model sees them). So the doc cannot
// drift: test/docs-scripted.test.ts fails when docs/scripted.md differs from what this renders.
//   node scripts/scripted-doc.ts          rewrite docs/scripted.md
//   node scripts/scripted-doc.ts --check  exit 1 when it is out of date
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { FinalSuggestions } from "../runner/agents/final-review.ts";
import { PrescanPlan } from "../runner/agents/prescan.ts";
import { ReviewVerdict } from "../runner/agents/review.ts";
import { CritiqueReply, Trace } from "../runner/critique/schema.ts";
import { oracleReply } from "../runner/helpers/oracle/schema.ts";
import type { JobBroker } from "../runner/jobs/broker.ts";
import { jobTools } from "../runner/jobs/tools.ts";
import { ReplySchema, SCRIPT_ROLES } from "../runner/llm/scripted/script.ts";
import { reviewTools, workTools } from "../runner/tools/registry.ts";
import type { Tool } from "../runner/tools/tool.ts";

export const DOC = join(import.meta.dirname, "..", "docs", "scripted.md");

type Schema = {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: Schema[];
  oneOf?: Schema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  default?: unknown;
  additionalProperties?: unknown;
};

/** What each role answers with, and which schema checks it (undefined: a text the role's parser checks). */
const ROLES: Record<(typeof SCRIPT_ROLES)[number], { schema?: z.ZodType; what: string }> = {
  prescan: {
    schema: PrescanPlan,
    what: "One `json` reply per iteration: the plan for the next work pass. `node` must be a ready node id (`root`, `root/1`, ...: the sub-SAMs first, the parent when its children are complete); `skills` only names of skills the run has. A reply that does not fit is sent back once with the reason, so a second prescan reply is used for the retry.",
  },
  work: {
    what: "Tool calls (the work tools below, and the job tools for a task with `jobs: slurm`), one reply a step; the pass ends with a `report_done` or `report_blocker` call. A reply with text and no tool call is a step that did nothing.",
  },
  review: {
    schema: ReviewVerdict,
    what: "Optional tool calls (the review tools below, in a read-only sandbox), then one `json` reply: the verdict. `items` has exactly one entry per Expectation item of the node under review, by id: `root/e1`, `root/e2`, ... for the top-level SAM, `root/1/e1` for its first sub-SAM. A node whose checks failed fails whatever the review says. A verdict that does not fit is sent back once with the reason.",
  },
  final_review: {
    schema: FinalSuggestions,
    what: "One `json` reply when the run ends: suggestions for the task group's memory and proposals for global memory (a person accepts those).",
  },
  make_task: {
    what: "`text`: a whole SAM (front matter, title, To-do, Expectation), optionally in one Markdown fence. It is validated like `scifi validate`; a draft with errors is sent back with them, at most 3 tries.",
  },
  make_skill: {
    what: "`text`: a whole skill file (front matter with `name`, `description`, `requires`; the skill's Markdown). It is validated by the skill parser; a draft with errors is sent back, at most 3 tries.",
  },
  ask: {
    what: "`text`: the answer in Markdown, ending with a `Sources:` line naming the documents it used (ids as given, e.g. `README.md; docs/loop.md`). Every `scifi <command>` in code must be a real command, else the answer is flagged.",
  },
  evolve: {
    what: "`text`: a short summary of the recurring review findings `scifi evolve` lists (optional: `scifi evolve --model`); shown beside the findings it summarises, labelled scripted when it is.",
  },
  tracer: {
    schema: Trace,
    what: "Optional read-only tool calls (the review tools, in the critique's sandbox on the final task folder), then one `json` reply: the as-implemented specification (docs/critique.md). Every citation is checked by the runner against the cited lines.",
  },
  critique: {
    schema: CritiqueReply,
    what: "One `json` reply: typed findings with a severity, each pointing at an item and at trace entries (docs/critique.md). A reply that does not fit is sent back once with the reason.",
  },
  oracle: {
    schema: oracleReply,
    what: "One `json` reply: at most three findings, each phrase copied exactly from the To-do or Expectation. A reply that does not fit is sent back once with the reason.",
  },
};

function typeOf(s: Schema): string {
  if (s.const !== undefined) return `\`${JSON.stringify(s.const)}\``;
  if (s.enum) return s.enum.map((v) => `\`${JSON.stringify(v)}\``).join(" \\| ");
  const union = s.anyOf ?? s.oneOf;
  if (union) return union.map(typeOf).join(" \\| ");
  const type = Array.isArray(s.type) ? s.type.join(" \\| ") : (s.type ?? "any");
  if (type === "array") return `list of ${s.items ? typeOf(s.items) : "any"}`;
  if (type === "object" && !s.properties) return "map";
  return type;
}

function bounds(s: Schema): string {
  const parts: string[] = [];
  if (s.minimum !== undefined) parts.push(`>= ${s.minimum}`);
  if (s.maximum !== undefined && s.maximum < Number.MAX_SAFE_INTEGER) parts.push(`<= ${s.maximum}`);
  if (s.minLength !== undefined && s.minLength > 0) parts.push(`non-empty`);
  if (s.maxLength !== undefined) parts.push(`at most ${s.maxLength} characters`);
  if (s.minItems !== undefined && s.minItems > 0) parts.push(`at least ${s.minItems} items`);
  if (s.maxItems !== undefined) parts.push(`at most ${s.maxItems} items`);
  if (s.default !== undefined) parts.push(`default \`${JSON.stringify(s.default)}\``);
  return parts.join(", ");
}

/** One row per field, nested objects (and lists of objects) flattened as `a.b` and `a[].b`. */
function rows(schema: Schema, prefix = ""): string[] {
  const out: string[] = [];
  const required = new Set(schema.required ?? []);
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    const path = `${prefix}${name}`;
    const cell = (t: string) => t.replace(/\|/g, "\\|").replace(/\n/g, " ");
    const limits = bounds(field);
    out.push(
      `| \`${path}\` | ${typeOf(field)} | ${required.has(name) ? "yes" : "no"} | ${cell(field.description ?? "")}${limits ? `${field.description ? " " : ""}(${limits})` : ""} |`,
    );
    if (field.properties) out.push(...rows(field, `${path}.`));
    if (field.items?.properties) out.push(...rows(field.items, `${path}[].`));
  }
  return out;
}

function table(schema: Schema): string {
  const body = rows(schema);
  if (body.length === 0) return "(no input fields)";
  return ["| field | type | required | meaning |", "| --- | --- | --- | --- |", ...body].join("\n");
}

function jsonSchema(schema: z.ZodType): Schema {
  return z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Schema;
}

function toolSection(tools: readonly Tool[]): string {
  return tools
    .map((tool) => {
      const summary = tool.spec.description.split("\n").find((l) => l.trim() !== "") ?? "";
      return `### \`${tool.name}\`\n\n${summary.trim()}\n\n${table(tool.spec.inputSchema as Schema)}`;
    })
    .join("\n\n");
}

export function renderScriptedDoc(): string {
  const work = [...workTools.values()];
  const review = [...reviewTools.values()];
  const jobs = jobTools({ granted: true } as JobBroker);
  const roles = SCRIPT_ROLES.map((role) => {
    const { schema, what } = ROLES[role];
    const shape = schema ? `\n\n${table(jsonSchema(schema))}` : "";
    return `### \`${role}\`\n\n${what}${shape}`;
  }).join("\n\n");
  return `<!-- Generated by scripts/scripted-doc.ts from the schemas the code validates with; do not edit.
     Regenerate: bash scripts/with-node.sh node scripts/scripted-doc.ts -->
# The scripted model: replies, roles and tools

The scripted model is a real HTTP server on 127.0.0.1 that answers in the Anthropic and OpenAI wire
formats from a YAML script (\`--model scripted:FILE.yaml\`). It is labelled scripted everywhere:
provider \`scripted\`, model \`scripted-<file name>\`, price 0. The script is a map of role -> list
of replies, used in order; the README has a whole example that the test suite runs
(\`test/readme-example.e2e.test.ts\`). This page is generated from the schemas the code validates
with, so what it says is what is checked.

A reply that does not fit its role's schema ends the run (after the one retry) with a reason that
names the reply by its script line, the field and what was expected, on the terminal and in the
report, e.g. \`the prescan agent's reply did not fit its schema: reply demo.yaml:3: node: Invalid
input: expected string, received undefined; the retry got no answer: ...\`.

## The context window

A script may set \`context_window: N\` (tokens) beside its roles. A request whose prompt (tools,
system and messages, counted as the scripted usage counts them: about four characters a token)
passes N, or whose prompt plus its \`max_tokens\` passes N, is refused before any reply of the
script is used, with the real providers' error: HTTP 400 \`invalid_request_error\` "prompt is too
long: P tokens > N maximum" (or "input length and \`max_tokens\` exceed context limit: P + R > N,
...") in the Anthropic format, and HTTP 400 with \`code: context_length_exceeded\` ("This model's
maximum context length is N tokens. However, ...") in the OpenAI format. Without it, any request fits.

## Reply fields (every role)

${table(jsonSchema(ReplySchema))}

## Roles and what each reply must hold

${roles}

## Work tools

The work agent's tools; \`input\` of a \`tool_calls\` entry holds these fields. An input that does
not fit is answered with an error text the model (your script) sees as the tool result, as a real
model would; the run goes on.

${toolSection(work)}

## Review tools

The review agent gets ${review.map((t) => `\`${t.name}\``).join(", ")} (the same inputs as above),
in a sandbox that sees the task folder read-only.

## Job tools (a task with \`jobs: slurm\`)

${toolSection(jobs)}
`;
}

if (import.meta.main) {
  const text = renderScriptedDoc();
  if (process.argv.includes("--check")) {
    const current = readFileSync(DOC, "utf8");
    if (current !== text) {
      console.error(`${DOC} is out of date; run: bash scripts/with-node.sh node scripts/scripted-doc.ts`);
      process.exitCode = 1;
    }
  } else {
    writeFileSync(DOC, text);
    console.log(`wrote ${DOC}`);
  }
}
