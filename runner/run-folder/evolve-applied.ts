// The person's decisions on `scifi evolve` proposals: `<home>/evolve/decisions.jsonl`, append-only,
// one JSON line a decision (runner/evolve/store.ts writes it). A leaf of the run-folder schema, so
// that the run can record which applied proposals it ran under (state.json `evolve`) and the
// report can show them, neither importing runner/evolve.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface EvolveDecision {
  id: string;
  kind: string;
  decision: "applied" | "rejected";
  /** The proposal's title, as shown when it was decided. */
  title: string;
  /** Who decided (the account that ran `scifi evolve apply|reject`) and when (ISO). */
  who: string;
  at: string;
  note: string;
  /** The file changed, and its SHA-256 before and after (applied changes of a file). */
  file?: string;
  beforeSha256?: string;
  afterSha256?: string;
}

/** What a run records of one applied proposal it ran under. */
export interface AppliedProposal {
  id: string;
  kind: string;
  title: string;
  at: string;
}

export function evolveDecisionsFile(home: string): string {
  return join(home, "evolve", "decisions.jsonl");
}

/** Every decision in order; a damaged line (a torn write) is skipped, never guessed at. */
export function readEvolveDecisions(home: string): EvolveDecision[] {
  const file = evolveDecisionsFile(home);
  if (!existsSync(file)) return [];
  const out: EvolveDecision[] = [];
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    try {
      out.push(JSON.parse(line) as EvolveDecision);
    } catch {
      // A torn last line of a crashed writer.
    }
  }
  return out;
}

/** The proposals applied up to `before` (a run's start), oldest first. */
export function appliedProposals(home: string, before: Date = new Date()): AppliedProposal[] {
  return readEvolveDecisions(home)
    .filter((d) => d.decision === "applied" && Date.parse(d.at) <= before.getTime())
    .map((d) => ({ id: d.id, kind: d.kind, title: d.title, at: d.at }));
}
