// Preference pairs from an eval's repeats (the trial results of runner/eval/trial-result.ts): within
// one task and variant, a passing trial against a failing one, for each role both runs have, same
// model. The conversation compared is the role's last pass in each run (the attempt the verdict
// judged); `input` is its system prompt and first user message (the passing run's), the outputs
// are everything after it, and the verdicts (with the failing run's cause) are the reason. The
// shape is the one preference trainers read (`{input, preferred_output, non_preferred_output}`).
import type { CallRecord } from "../audit/types.ts";
import type { ExportGuard } from "./guard.ts";
import { type ChatMessage, type ChatTool, chatMessages, chatTools } from "./sft.ts";
import type { Out } from "./sink.ts";
import type { ExportRun } from "./source.ts";
import { readVerified } from "./tape-stream.ts";

interface Conversation {
  messages: ChatMessage[];
  tools: ChatTool[];
  model: string;
}

/** Each role's last conversation in a verified run (the last call of its last pass). */
export async function lastConversations(
  run: ExportRun,
  roles: string[],
  key?: Buffer,
): Promise<Map<string, Conversation>> {
  const last = new Map<string, CallRecord>();
  await readVerified(run, {
    ...(key ? { key } : {}),
    onCall: ({ record }) => {
      if (roles.length > 0 && !roles.includes(record.role)) return;
      if (record.error || !record.response) return;
      last.set(record.role, record); // the role's last call: its last pass, whole
    },
  });
  const out = new Map<string, Conversation>();
  for (const [role, record] of last)
    out.set(role, { messages: chatMessages(record), tools: chatTools(record), model: record.model });
  return out;
}

export interface PairGroup {
  task: string;
  variant: string;
  model: string;
  pass: ExportRun[];
  fail: ExportRun[];
}

/** The run's integrity events (docs/integrity.md): what a defence refused, undid or overrode. */
export function integrityEvents(run: ExportRun): number {
  return run.history.filter((e) => e.type === "integrity").length;
}

/**
 * Trials grouped by task, variant and model; `error` trials (infrastructure) are in neither side. A
 * passing trial with integrity events is never preferred: it is on the non-preferred side, against
 * the clean passes.
 */
export function pairGroups(runs: ExportRun[]): PairGroup[] {
  const groups = new Map<string, PairGroup>();
  for (const run of runs) {
    const trial = run.trial;
    if (!trial || trial.status === "error") continue;
    const key = JSON.stringify([trial.task, trial.variant, trial.model]);
    const group = groups.get(key) ?? {
      task: trial.task,
      variant: trial.variant,
      model: trial.model,
      pass: [],
      fail: [],
    };
    (trial.status === "pass" && integrityEvents(run) === 0 ? group.pass : group.fail).push(run);
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** Writes every pair of the groups (each passing trial against each failing one); resolves with how many. */
export async function writePreference(
  groups: PairGroup[],
  guard: (run: ExportRun) => ExportGuard,
  out: Out,
  options: { roles?: string[]; key?: Buffer },
): Promise<number> {
  let pairs = 0;
  const roles = options.roles ?? [];
  const cache = new Map<string, Map<string, Conversation>>();
  const conversations = async (run: ExportRun) => {
    let found = cache.get(run.dir);
    if (!found) {
      found = await lastConversations(run, roles, options.key);
      cache.set(run.dir, found);
    }
    return found;
  };
  for (const group of groups) {
    for (const good of group.pass) {
      const goodConv = await conversations(good);
      for (const bad of group.fail) {
        const badConv = await conversations(bad);
        for (const [role, preferred] of goodConv) {
          const rejected = badConv.get(role);
          // Same model: the group's (the eval's model spec); the tape's model names are in the metadata.
          if (!rejected) continue;
          const cut = inputLength(preferred.messages);
          const input = preferred.messages.slice(0, cut);
          const pair = {
            input: { messages: input, tools: preferred.tools },
            preferred_output: preferred.messages.slice(cut),
            non_preferred_output: rejected.messages.slice(inputLength(rejected.messages)),
            metadata: {
              task: group.task,
              variant: group.variant,
              model: group.model,
              role,
              response_models: { preferred: preferred.model, non_preferred: rejected.model },
              scripted: Boolean(good.trial?.scripted || bad.trial?.scripted),
              same_input:
                JSON.stringify(input) ===
                JSON.stringify(rejected.messages.slice(0, inputLength(rejected.messages))),
              reason: `${good.trial?.trialId}: ${good.trial?.verdict} (${good.trial?.cause}); ${bad.trial?.trialId}: ${bad.trial?.verdict} (${bad.trial?.cause})`,
              preferred: { run_id: good.runId, trial: good.trial?.trialId, verdict: good.trial?.verdict },
              non_preferred: {
                run_id: bad.runId,
                trial: bad.trial?.trialId,
                verdict: bad.trial?.verdict,
                cause: bad.trial?.cause,
                integrity_events: integrityEvents(bad),
              },
            },
          };
          // Each side's text is guarded with its own run's rules (task folder, hidden assets), then the whole.
          const text = guard(bad).json(
            guard(good).json(JSON.stringify(pair), `pair ${good.runId}/${bad.runId}`),
            `pair ${good.runId}/${bad.runId}`,
          );
          out.write(`${text}\n`);
          pairs++;
        }
      }
    }
  }
  return pairs;
}

/** The system prompt and the first user turn. */
function inputLength(messages: ChatMessage[]): number {
  const firstUser = messages.findIndex((m) => m.role === "user");
  return firstUser < 0 ? 1 : firstUser + 1;
}
