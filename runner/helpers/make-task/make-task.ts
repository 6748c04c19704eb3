// The task maker: request -> SAM draft -> deterministic validation -> repair, at most `maxTries`
// model calls; grants the request did not name are withheld (see grants.ts). Nothing is run.

import type { Model } from "../../llm/types.ts";
import { checkSamText } from "../../sam/gate.ts";
import type { Diagnostic } from "../../sam/types.ts";
import { grantsOf, renderSkillIndex, type Skill, skillIndex } from "../../skills/index.ts";
import { gateOptions } from "../../skills/sam-gate.ts";
import { draftWithRepairs } from "../draft-loop.ts";
import { renderPrompt } from "../prompt.ts";
import { assertOnlyNamedGrants, namedGrants, type WithheldGrant, withholdGrants } from "./grants.ts";

export interface MakeTaskOptions {
  /** The user's request, verbatim. */
  request: string;
  model: Model;
  /** The helper's run id (its audit tape lives in runs/<runId>/). */
  runId: string;
  skills: readonly Skill[];
  /** Where the draft will be written: relative paths in it are validated against this location. */
  outputFile: string;
  /** Model calls at most (first draft + repairs). */
  maxTries?: number;
  rank?: number;
}

export interface MakeTaskAttempt {
  draft: string;
  diagnostics: Diagnostic[];
}

export interface MakeTaskResult {
  ok: boolean;
  /** The last draft (valid when ok), with withheld grants as comments. */
  text: string;
  attempts: MakeTaskAttempt[];
  withheld: WithheldGrant[];
}

export const MAKE_TASK_TRIES = 3;

/**
 * The skill index offered to the task maker: every skill whose requirements the request itself
 * names (the draft cannot grant more than that, so other skills could not be used).
 */
function offeredSkills(skills: readonly Skill[], request: string) {
  const named = namedGrants(request);
  return skillIndex(
    skills,
    grantsOf({ network: named.network, gpu: named.gpu ? 1 : 0, jobs: named.jobs ? "slurm" : undefined }),
  );
}

export async function makeTask(options: MakeTaskOptions): Promise<MakeTaskResult> {
  const maxTries = options.maxTries ?? MAKE_TASK_TRIES;
  const system = renderPrompt(new URL("./make-task.md", import.meta.url), {
    skill_index: renderSkillIndex(offeredSkills(options.skills, options.request)),
  });
  const attempts: MakeTaskAttempt[] = [];
  let withheld: WithheldGrant[] = [];
  const accepted = await draftWithRepairs<string>({
    model: options.model,
    role: "make_task",
    runId: options.runId,
    rank: options.rank ?? 1,
    system,
    ask: options.request,
    maxTokens: 8000,
    maxTries,
    check(raw) {
      const guarded = withholdGrants(raw, options.request);
      withheld = guarded.withheld;
      const diagnostics = validateDraft(guarded.text, options);
      attempts.push({ draft: guarded.text, diagnostics });
      if (!diagnostics.some((d) => d.severity === "error")) return { done: guarded.text };
      return { reply: guarded.text, repair: repairMessage(diagnostics) };
    },
  });
  if (accepted !== undefined) return { ok: true, text: accepted, attempts, withheld };
  return { ok: false, text: attempts.at(-1)?.draft ?? "", attempts, withheld };
}

/**
 * The one gate `scifi validate` and every entry point run (runner/sam/gate.ts, at the place the draft
 * will be written), then the grant gate (as a diagnostic the model can fix).
 */
function validateDraft(text: string, options: MakeTaskOptions): Diagnostic[] {
  const parsed = checkSamText(text, options.outputFile, gateOptions(options.skills));
  if (!parsed.ok) return parsed.diagnostics;
  const diagnostics = [...parsed.diagnostics];
  try {
    assertOnlyNamedGrants(parsed.sam.metadata, options.request);
  } catch (error) {
    diagnostics.push({
      file: options.outputFile,
      line: 1,
      column: 1,
      severity: "error",
      message: (error as Error).message,
    });
  }
  return diagnostics;
}

function repairMessage(diagnostics: Diagnostic[]): string {
  const list = diagnostics
    .filter((d) => d.severity === "error")
    .map((d) => `- line ${d.line}:${d.column}: ${d.message}`)
    .join("\n");
  return renderPrompt(new URL("./repair.md", import.meta.url), { diagnostics: list });
}
