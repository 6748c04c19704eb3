// The Tool contract and its one definition helper. A tool is a zod input schema, a Markdown
// description next to it (what the model reads) and `execute(input, ctx)`. defineTool validates the
// model's input before anything runs, caps the output, and turns thrown errors into error texts the
// model can act on, so no tool repeats that work.
import { readFileSync } from "node:fs";
import { z } from "zod";
import type { ToolSpec } from "../llm/types.ts";
import { RunEnding } from "../run-ending.ts";
import type { Sandbox } from "../sandbox/types.ts";
import { capText } from "./truncate.ts";

/** What a tool may touch. The loop builds one per pass. */
export interface ToolContext {
  sandbox: Sandbox;
  /** Program names the bash tool may run; undefined = no allowlist. */
  allowCommands?: readonly string[];
  /** Default and maximum bash timeout (ms). */
  bashTimeoutMs: number;
  /** Characters of tool output the model sees (head and tail kept). */
  maxOutputChars: number;
  /** The run's stop (a cancel, the wall-time deadline as the run's clock moves it): kills a running command. */
  signal?: AbortSignal;
  /** Cuts an output to what the pass's context budget allows (after maxOutputChars); absent: no budget. */
  capOutput?: (text: string) => string;
  /** The full text of a tool output the pass elided (the `recall` tool); absent: nothing is elided. */
  recall?: (id: string) => string | undefined;
}

/** How the loop treats a call: reads may repeat more often; a write resets repeat counters. */
export type ToolEffect = "read" | "write" | "exec" | "control";

/** A typed exit requested by the model (mini-swe-agent style: typed exits, not flags). */
export type ToolSignal =
  | { type: "done"; claim: string; summary: string }
  | { type: "blocker"; reason: string; needs: string };

export interface ToolOutcome {
  ok: boolean;
  /** The text the model sees as the tool result. */
  output: string;
  signal?: ToolSignal;
  /** A defence of the tool refused the call (the allowlist): the rule, for the run's integrity record. */
  refused?: { rule: string; detail: string };
}

export interface Tool {
  readonly name: string;
  readonly effect: ToolEffect;
  readonly spec: ToolSpec;
  /** Validate `input`, then execute. Never throws for bad input or tool failure. */
  run(input: unknown, ctx: ToolContext): Promise<ToolOutcome>;
}

export interface ToolDefinition<S extends z.ZodObject> {
  name: string;
  effect: ToolEffect;
  input: S;
  /** URL of the Markdown description file (the model reads it verbatim). */
  description: URL;
  execute(input: z.infer<S>, ctx: ToolContext): Promise<ToolOutcome>;
}

export function defineTool<S extends z.ZodObject>(def: ToolDefinition<S>): Tool {
  const description = readFileSync(def.description, "utf8").trim();
  const inputSchema = jsonSchemaOf(def.input);
  return {
    name: def.name,
    effect: def.effect,
    spec: { name: def.name, description, inputSchema },
    async run(input, ctx) {
      const parsed = def.input.safeParse(input ?? {});
      if (!parsed.success) {
        return { ok: false, output: `Invalid input for tool '${def.name}': ${formatIssues(parsed.error)}` };
      }
      try {
        const outcome = await def.execute(parsed.data, ctx);
        const capped = capText(outcome.output, ctx.maxOutputChars);
        return { ...outcome, output: ctx.capOutput ? ctx.capOutput(capped) : capped };
      } catch (error) {
        // Errors that end runs end the run rather than the call (an approval the person never gave in
        // time, a sandbox that died twice).
        if (error instanceof RunEnding) throw error;
        const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
        const capped = capText(message, ctx.maxOutputChars);
        return {
          ok: false,
          output: `Tool '${def.name}' failed: ${ctx.capOutput ? ctx.capOutput(capped) : capped}`,
        };
      }
    },
  };
}

/** The JSON Schema the model sees: draft 2020-12 without the `$schema` key (providers reject it). */
export function jsonSchemaOf(schema: z.ZodObject): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

export function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(input)"}: ${issue.message}`)
    .join("; ");
}
