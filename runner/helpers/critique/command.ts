// `scifi critique <run>`: the tracer and the critique on a finished run's final task folder, after the
// fact. The grant is resolved again from the run's SAM (as parsed at its start) and the site policy,
// shaped as the critique phase's (read-only, no network); the model calls go to a helper tape of
// their own; the record joins the run's critique records (critique/afterN.json), so its report shows
// it. It never changes the run's outcome. It holds the task folder's lock while its sandbox has it
// lent, as a run does: refused, naming the run, when a live run holds the folder.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { writeJsonAtomic } from "../../atomic-write.ts";
import { critiqueNode } from "../../critique/critique-pass.ts";
import { likelyMismatchesText, renderCritiqueText } from "../../critique/text.ts";
import { EXIT } from "../../exit-codes.ts";
import { scifiHome } from "../../paths.ts";
import { resolveSpec } from "../../policy/resolve.ts";
import { loadSitePolicy, sitePolicyPath } from "../../policy/site.ts";
import { runPass } from "../../run/session/conversation.ts";
import { RunBudget } from "../../run/session/limits.ts";
import { exitReason } from "../../run/session/outcomes.ts";
import { phaseSpec } from "../../run/session/sandboxes.ts";
import { openRunFolder, readSamJson } from "../../run-folder/folder.ts";
import { readState } from "../../run-folder/state.ts";
import { getBackend } from "../../sandbox/registry.ts";
import { lockTaskFolder, refuseBusyTaskFolder, TaskFolderBusy } from "../../task-folder-lock.ts";
import { visibleJson } from "../../terminal-text.ts";
import { tracerTools } from "../../tools/registry.ts";
import { openOrExplain } from "../session.ts";

export interface CritiqueCommandOptions {
  model?: string;
  backend?: string;
  json?: boolean;
  env?: NodeJS.ProcessEnv;
  out?: (text: string) => void;
  err?: (text: string) => void;
}

export async function runCritiqueCommand(runId: string, options: CritiqueCommandOptions): Promise<number> {
  const out = options.out ?? ((t: string) => process.stdout.write(t));
  const err = options.err ?? ((t: string) => process.stderr.write(t));
  const home = scifiHome(options.env);
  const folder = openRunFolder(home, runId);
  if (!existsSync(folder.files.state) || !existsSync(folder.files.samJson)) {
    err(`scifi critique: no finished run '${runId}' under ${home}/runs (it needs state.json and sam.json)\n`);
    return EXIT.usage;
  }
  const state = readState(folder.files.state);
  if (state.phase !== "ended") {
    err(
      `scifi critique: run ${runId} has not ended (phase ${state.phase}); its own critique phase runs while it goes on\n`,
    );
    return EXIT.usage;
  }
  const sam = readSamJson(folder);
  const model = options.model ?? state.model;
  const site = loadSitePolicy(sitePolicyPath(home), false).policy;
  const granted = resolveSpec(sam, site, { home, runId: state.runId });
  const spec = phaseSpec(granted, "critique", state.pristine);
  // The critique's sandbox lends the task folder as a run's does: one user of a folder at a time
  // (a38c). Refused before anything is made; the lock itself is taken once the helper run exists.
  try {
    refuseBusyTaskFolder(home, spec.taskDir);
  } catch (error) {
    if (!(error instanceof TaskFolderBusy)) throw error;
    err(`scifi critique: ${error.message}\n`);
    return EXIT.usage;
  }
  const session = await openOrExplain(
    {
      home,
      helper: "critique",
      ...(model ? { modelSpec: model } : {}),
      ...(options.env ? { env: options.env } : {}),
    },
    err,
  );
  if (typeof session === "number") return session;
  let release: (() => void) | undefined;
  try {
    try {
      release = lockTaskFolder(home, spec.taskDir, session.runId);
    } catch (error) {
      if (!(error instanceof TaskFolderBusy)) throw error;
      err(`scifi critique: ${error.message}\n`);
      return EXIT.usage;
    }
    const backend = await getBackend(options.backend ?? state.backend);
    const budget = new RunBudget(state.limits);
    const request = {
      kind: "control" as const,
      rank: sam.metadata.rank?.control ?? 1,
      meta: { runId: session.runId, iteration: state.iteration, sam: { file: sam.file, sha256: sam.sha256 } },
    };
    const record = await critiqueNode({
      node: sam.root,
      iteration: state.iteration,
      mode: "report",
      taskDir: spec.taskDir,
      model: session.model,
      packs: [],
      rank: request.rank,
      meta: request.meta,
      openSandbox: () =>
        backend.start({
          ...spec,
          runId: state.runId,
          sandbox: { runId: session.runId, role: "critique", iteration: state.iteration, resumes: 0 },
        }),
      converse: async (brief, sandbox) => {
        const { tracerSystem } = await import("../../critique/agent.ts");
        const { exit } = await runPass({
          model: session.model,
          tools: tracerTools,
          toolContext: {
            sandbox,
            bashTimeoutMs: state.limits.bashTimeoutSec * 1000,
            maxOutputChars: state.limits.toolOutputChars,
          },
          limits: state.limits,
          budget,
          request: { ...request, role: "tracer", system: tracerSystem() },
          brief,
          textReply: "answer",
          blockerNudge: () => "The runner: your tool calls keep failing. Answer now with the JSON trace.",
        });
        return exit.type === "answer"
          ? { json: exit.response.json, text: exit.text }
          : { noAnswer: `${exit.type}: ${exitReason(exit)}` };
      },
    });
    const dir = join(folder.dir, "critique");
    const n = existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith("after")).length + 1 : 1;
    const file = join(dir, `after${n}.json`);
    writeJsonAtomic(file, { ...record, after: session.runId }, { mode: 0o600 });
    out(options.json ? `${visibleJson(record, 2)}\n` : renderCritiqueText(record));
    err(`${likelyMismatchesText(record)}\nrecord: ${file}\naudit tape: ${session.runDir}/audit.jsonl\n`);
    return record.failed ? EXIT.failed : EXIT.ok;
  } finally {
    release?.();
    await session.close();
  }
}
