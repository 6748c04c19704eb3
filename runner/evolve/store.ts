// Where proposals live and how a person decides them: `<home>/evolve/<id>.json` (one proposal, its
// evidence and change) and `<home>/evolve/decisions.jsonl` (append-only: who applied or rejected
// what, when, with which note, and the file's hash before and after). A decided proposal is never
// rewritten; a pending one is refreshed when `scifi evolve` finds it again. Applying writes exactly
// the text the proposal shows (the diff), and only onto the text it was computed on.
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { userInfo } from "node:os";
import { dirname, join } from "node:path";
import { appendDurably, writeFileAtomic, writeJsonAtomic } from "../atomic-write.ts";
import { acceptProposal } from "../memory/proposals.ts";
import { homePaths } from "../paths.ts";
import {
  type EvolveDecision,
  evolveDecisionsFile,
  readEvolveDecisions,
} from "../run-folder/evolve-applied.ts";
import { sha256 } from "../sha256.ts";
import type { EvolveProposal } from "./proposals.ts";

export class EvolveError extends Error {
  override name = "EvolveError";
}

export type ProposalStatus = "pending" | "applied" | "rejected";

export function evolveDir(home: string): string {
  return homePaths(home).evolve;
}

const ID = /^[A-Za-z0-9._-]{1,120}$/;

function proposalFile(home: string, id: string): string {
  if (!ID.test(id)) throw new EvolveError(`'${id}' is not a proposal id (see 'scifi evolve list')`);
  return join(evolveDir(home), `${id}.json`);
}

export function statusOf(home: string): Map<string, EvolveDecision> {
  const decided = new Map<string, EvolveDecision>();
  for (const d of readEvolveDecisions(home)) if (!decided.has(d.id)) decided.set(d.id, d);
  return decided;
}

/** Writes the pending proposals (decided ones stay as they were); returns each with its status. */
export function saveProposals(
  home: string,
  proposals: EvolveProposal[],
): { proposal: EvolveProposal; status: ProposalStatus }[] {
  const decided = statusOf(home);
  return proposals.map((proposal) => {
    const decision = decided.get(proposal.id);
    if (decision) return { proposal, status: decision.decision };
    writeJsonAtomic(proposalFile(home, proposal.id), proposal, { mode: 0o600 });
    return { proposal, status: "pending" as const };
  });
}

export function readProposal(home: string, id: string): EvolveProposal {
  const file = proposalFile(home, id);
  if (!existsSync(file))
    throw new EvolveError(`no proposal '${id}' in ${evolveDir(home)} (see 'scifi evolve list')`);
  return JSON.parse(readFileSync(file, "utf8")) as EvolveProposal;
}

export function listStored(home: string): { proposal: EvolveProposal; status: ProposalStatus }[] {
  const dir = evolveDir(home);
  if (!existsSync(dir)) return [];
  const decided = statusOf(home);
  return readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(dir, name), "utf8")) as EvolveProposal)
    .map((proposal) => ({ proposal, status: decided.get(proposal.id)?.decision ?? "pending" }));
}

function pending(home: string, id: string): EvolveProposal {
  const proposal = readProposal(home, id);
  const decision = statusOf(home).get(id);
  if (decision)
    throw new EvolveError(
      `proposal '${id}' was already ${decision.decision} by ${decision.who} at ${decision.at}`,
    );
  return proposal;
}

export interface DecideOptions {
  note: string;
  who?: string;
  now?: Date;
}

function record(home: string, decision: EvolveDecision): void {
  const file = evolveDecisionsFile(home);
  mkdirSync(dirname(file), { recursive: true });
  appendDurably(file, `${JSON.stringify(decision)}\n`);
}

const whoAmI = (): string => {
  try {
    return userInfo().username;
  } catch {
    return process.env.USER ?? `uid ${process.getuid?.() ?? "?"}`;
  }
};

/**
 * Applies a pending proposal: writes its file change (refused when the file changed since the
 * proposal was computed), accepts its global memory proposal, or only records the decision (a
 * skill: the person runs the make-skill command). Then appends the decision.
 */
export async function applyProposal(
  home: string,
  id: string,
  options: DecideOptions,
): Promise<EvolveDecision> {
  if (!options.note.trim()) throw new EvolveError("apply needs a note (--note TEXT): why the change is made");
  const proposal = pending(home, id);
  if (proposal.kind !== "skill" && proposal.kind !== "memory" && !proposal.change)
    throw new EvolveError(
      `proposal '${id}' has no change to apply: ${proposal.noChange ?? "none was computed"}`,
    );
  const at = (options.now ?? new Date()).toISOString();
  const decision: EvolveDecision = {
    id,
    kind: proposal.kind,
    decision: "applied",
    title: proposal.title,
    who: options.who ?? whoAmI(),
    at,
    note: options.note,
  };
  if (proposal.change) {
    const { file, beforeSha256, after } = proposal.change;
    const now = existsSync(file) ? readFileSync(file, "utf8") : undefined;
    if (now === undefined) throw new EvolveError(`${file} is gone: nothing to apply '${id}' to`);
    if (sha256(now) !== beforeSha256)
      throw new EvolveError(
        `${file} changed since proposal '${id}' was computed (its diff no longer describes the change): run 'scifi evolve' again for a fresh proposal`,
      );
    // Whole or not at all, on disk before the decision says it was applied.
    writeFileAtomic(file, after, {
      mode: statSync(file).mode & 0o777,
      tempFile: `${file}.${process.pid}.evolve.tmp`,
      createFolder: false,
    });
    Object.assign(decision, { file, beforeSha256, afterSha256: sha256(after) });
  }
  if (proposal.memory) await acceptProposal(home, proposal.memory.accept, options.now);
  record(home, decision);
  return decision;
}

export function rejectProposal(home: string, id: string, options: DecideOptions): EvolveDecision {
  const proposal = pending(home, id);
  const decision: EvolveDecision = {
    id,
    kind: proposal.kind,
    decision: "rejected",
    title: proposal.title,
    who: options.who ?? whoAmI(),
    at: (options.now ?? new Date()).toISOString(),
    note: options.note,
  };
  record(home, decision);
  return decision;
}
