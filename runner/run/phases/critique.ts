// Critique: after an iteration whose checks and review passed, the tracer writes what the delivered
// code computes (a fresh read-only sandbox on the final task folder), the runner checks its
// citations, and the critique compares it with the SAM (docs/critique.md). The mode decides what a
// verified likely-mismatch finding does: `report` shows it, `block` sends it back to the work agent
// as the next iteration's fix, `approve` makes the PASS wait for a person. It only ever makes the
// verdict stricter: it runs only on a passed verdict and can only turn it into a failed one.
import { join } from "node:path";
import { RecordWriteFailed, writeJsonAtomic } from "../../atomic-write.ts";
import type { TracerAnswer } from "../../critique/agent.ts";
import { type CritiquePack, critiqueNode } from "../../critique/critique-pass.ts";
import type { CheckedFinding, CritiqueRecord } from "../../critique/schema.ts";
import { BudgetExceeded } from "../../llm/types.ts";
import type { Phase } from "../../run-folder/state.ts";
import { tracerTools } from "../../tools/registry.ts";
import { Tampering } from "../checks/checks.ts";
import { GrantChanged } from "../gates/grant.ts";
import { runPass } from "../session/conversation.ts";
import { exitReason, messageOf } from "../session/outcomes.ts";
import type { RunSession } from "../session/session.ts";

export async function critiquePhase(session: RunSession): Promise<Phase> {
  const { state, deps } = session;
  const mode = deps.critique ?? "off";
  const verdict = state.verdict;
  if (mode === "off" || !verdict?.passed) return "critique";
  // A scripted script (or a replayed tape) without tracer replies: no critique to ask for; said on the tape.
  const roles = session.model.roles;
  if (roles && !(roles.has("tracer") && roles.has("critique"))) {
    session.audit.append({
      kind: "event",
      event: "critique_skipped",
      data: {
        iteration: state.iteration,
        reason: "the model has no tracer and critique replies (scripted or replay)",
      },
    });
    return "critique";
  }
  const node = session.node(session.plan().node);
  session.taskFolder.restore();
  session.emit({ phase: "critique", step: 0, toolCalls: 0 });
  const record = await critiqueNode({
    node,
    iteration: state.iteration,
    mode,
    taskDir: session.spec.taskDir,
    model: session.model,
    packs: packsOf(session),
    rank: session.sam.metadata.rank?.control ?? 1,
    meta: session.meta(),
    openSandbox: () => session.sandboxes.open("critique"),
    converse: (brief, sandbox) => traceConversation(session, brief, sandbox),
    onResponse: (response) => session.account(response),
  }).catch((error: unknown) => failedCritique(session, node.id, mode, error));
  const likely = record.findings.filter((f) => f.verified && f.severity === "likely_mismatch");
  const incomplete = incompleteWhy(record);
  if (likely.length > 0 && mode === "block") {
    record.effect = "sent_back";
    sendBack(session, likely, "the critique found a likely mismatch (critique: block)");
  } else if (incomplete && mode === "block") {
    // The work agent can make the critique fail (a planted README, a padded file, a link out): under
    // block that must not leave the PASS standing silently; the fix asked is to make it checkable.
    record.effect = "sent_back";
    sendBack(session, [], `the critique could not be completed: ${incomplete}`, [
      `the critique could not be completed: ${incomplete}; leave the code where the SAM names it, as plain files of a readable size, so the runner can check what it computes`,
    ]);
  } else if ((likely.length > 0 || incomplete) && mode === "approve") {
    const denied = await session.gates.acceptCritique(node.id, likely, incomplete);
    record.effect = denied === undefined ? "approved" : "denied";
    if (denied !== undefined) sendBack(session, likely, denied);
  }
  keep(session, record);
  session.result(critiqueResult(record));
  return "critique";
}

/**
 * A critique that could not run (a model error, a sandbox that died twice) is recorded as missing:
 * under report it leaves the verdict as the checks and the review made it; under block it fails the
 * iteration and under approve it asks a person (incompleteWhy). A spent budget, a full disk or a
 * cancel still end the run.
 */
function failedCritique(
  session: RunSession,
  node: string,
  mode: CritiqueRecord["mode"],
  error: unknown,
): CritiqueRecord {
  // What ends any run still ends this one: a full disk, a spent budget, a cancel, a changed grant, tampering.
  const ends = [RecordWriteFailed, BudgetExceeded, GrantChanged, Tampering];
  if (ends.some((kind) => error instanceof kind) || session.stop.signal.aborted) throw error;
  return {
    version: 1,
    iteration: session.state.iteration,
    node,
    mode,
    packs: [],
    trace: { items: [], quantities: [] },
    traceChecks: {},
    findings: [],
    effect: "none",
    failed: messageOf(error),
  };
}

/**
 * Why the critique is incomplete in a way the PASS must not hide under block and approve: it failed,
 * or a likely mismatch did not verify because of the folder's shape (a link out, a FIFO, a file past
 * the read window), which the work agent controls. Undefined when it is complete.
 */
export function incompleteWhy(record: CritiqueRecord): string | undefined {
  if (record.failed) return record.failed;
  const shaped = record.findings.filter(
    (f) => !f.verified && f.severity === "likely_mismatch" && f.citations.some((c) => c.shape),
  );
  if (shaped.length === 0) return undefined;
  const why = shaped
    .flatMap((f) =>
      f.citations.filter((c) => c.shape).map((c) => `${c.citation.file}: ${c.problem ?? "not read"}`),
    )
    .filter((line, i, all) => all.indexOf(line) === i);
  return `${shaped.length} likely mismatch(es) could not be verified on the code (${why.join("; ")})`;
}

/** The passed verdict made a failed one: the findings become the review's findings and fixes. */
function sendBack(
  session: RunSession,
  likely: readonly CheckedFinding[],
  why: string,
  fixes: readonly string[] = [],
): void {
  const verdict = session.state.verdict;
  if (!verdict) return;
  session.state.verdict = {
    ...verdict,
    passed: false,
    critique: `critique: ${why}`,
    findings: [...verdict.findings, `critique: ${why}`, ...likely.map(findingLine)],
    fixes: [
      ...verdict.fixes,
      ...fixes,
      ...likely.map((f) => `${f.item}: ${f.fix ?? f.reason} (critique: ${f.type})`),
    ],
  };
}

export function findingLine(f: CheckedFinding): string {
  const where = f.citations
    .filter((c) => c.verified)
    .map((c) => `${c.citation.file}:${c.citation.line}`)
    .join(", ");
  return `${f.severity} ${f.type} at ${f.item}${where ? ` (${where})` : ""}: ${f.reason}`;
}

/** The critique context of every selected skill (the SAM's and the plan's) that carries one. */
function packsOf(session: RunSession): CritiquePack[] {
  const skills = session.deps.skills;
  const names = [...new Set([...(skills?.granted ?? []), ...(session.state.plan?.skills ?? [])])];
  return names.flatMap((name) => {
    const context = skills?.critiqueContext?.(name);
    return context ? [{ name, ...context }] : [];
  });
}

/** One tracer conversation: read_file, glob and grep in the tracer's own sandbox, the JSON trace as its answer. */
async function traceConversation(
  session: RunSession,
  brief: string,
  sandbox: Parameters<typeof runPass>[0]["toolContext"]["sandbox"],
): Promise<TracerAnswer> {
  const { tracerSystem } = await import("../../critique/agent.ts");
  const { exit } = await runPass({
    model: session.model,
    // No bash: the agent's code never runs where what judges it runs (trust rule 8); a planted
    // numpy.py or sitecustomize.py in /task would run in any interpreter the tracer started there.
    tools: tracerTools,
    toolContext: { ...session.toolContext, sandbox, allowCommands: undefined },
    limits: session.limits,
    budget: session.budget,
    request: {
      role: "tracer",
      kind: "control",
      rank: session.sam.metadata.rank?.control ?? 1,
      system: tracerSystem(),
      meta: session.meta(),
    },
    brief,
    textReply: "answer",
    blockerNudge: () => "The runner: your tool calls keep failing. Answer now with the JSON trace.",
    onEvent: (event) => session.onPassEvent(event),
    signal: session.stop.signal,
  });
  if (exit.type === "budget") throw new BudgetExceeded(exit.reason);
  return exit.type === "answer"
    ? { json: exit.response.json, text: exit.text }
    : { noAnswer: `${exit.type}: ${exitReason(exit)}` };
}

/** The record in the run folder, on the audit tape (whole) and on the history (what a person scans). */
function keep(session: RunSession, record: CritiqueRecord): void {
  const { state } = session;
  const file = join(session.folder.dir, "critique", `it${state.iteration}.json`);
  writeJsonAtomic(file, record, { mode: 0o600 });
  session.audit.append({
    kind: "event",
    event: "critique",
    data: record as unknown as Record<string, unknown>,
  });
  session.history.append({
    type: "critique",
    iteration: state.iteration,
    node: record.node,
    mode: record.mode,
    effect: record.effect,
    traced: record.trace.items.length,
    quantities: record.trace.quantities.length,
    unverifiedCitations: Object.values(record.traceChecks)
      .flat()
      .filter((c) => !c.verified).length,
    findings: record.findings.map((f) => ({
      type: f.type,
      severity: f.severity,
      item: f.item,
      verified: f.verified,
      reason: f.reason,
    })),
    ...(record.packs.length > 0 ? { packs: record.packs } : {}),
    ...(record.failed ? { failed: record.failed } : {}),
  });
}

function critiqueResult(record: CritiqueRecord): string {
  if (record.failed) return `critique of ${record.node}: no critique (${record.failed})`;
  const likely = record.findings.filter((f) => f.verified && f.severity === "likely_mismatch").length;
  const unverified = record.findings.filter((f) => !f.verified).length;
  const effect = record.effect === "none" ? "" : `; ${record.effect.replace("_", " ")}`;
  return `critique of ${record.node}: ${record.findings.length} finding(s), ${likely} likely mismatch(es), ${unverified} unverified${effect}`;
}
