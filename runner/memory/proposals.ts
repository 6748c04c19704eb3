// Global memory proposals. A final review's global suggestions are appended to
// `memory/global.proposed.md`; they reach global memory (`memory/global.md`, which every run's
// pre-scan reads) only when a person accepts them with `scifi memory accept <id>`: one bad run
// must not teach every future run. Both files stay append-only: accepting appends the proposal's
// text to global.md and a decision entry to the proposals file; rejecting appends only the decision.
// Agents never reach this code (it is the CLI's); the runner only appends proposals.
import { existsSync, readFileSync } from "node:fs";
import { homePaths } from "../paths.ts";
import { foldRow, LISTING_WIDTH, visible, visibleLines } from "../terminal-text.ts";
import { appendEntry, parseEntries } from "./entries.ts";

export interface Proposal {
  id: string;
  title: string;
  /** `time · run X · role` as written. */
  meta: string;
  body: string;
  status: "pending" | "accepted" | "rejected";
}

/**
 * A proposal as `scifi memory list` prints it: a final review wrote it, so it is shown as it is (an
 * ESC[8m span, a CR as escapes, never obeyed), and every line is folded at LISTING_WIDTH columns
 * with a mark on each further row (`  + `, `    + ` in the body): a terminal soft-wraps no row, so
 * no text of the proposal is drawn at column 0, where it would pass for another proposal's header.
 */
export function renderProposal(p: Proposal): string[] {
  const fold = (line: string) => foldRow(line, { first: "", continuation: "  + ", width: LISTING_WIDTH });
  return [
    ...fold(`${visible(p.id)}  [${p.status}]  ${visible(p.title)}`),
    ...fold(`  ${visible(p.meta)}`),
    ...visibleLines(p.body, { prefix: "    ", continuation: "    + ", width: LISTING_WIDTH }),
  ];
}

/** The id suffix of a decision entry about proposal `id`. */
const DECISION = /^(.*)#(accepted|rejected)$/;

export class ProposalError extends Error {
  override name = "ProposalError";
}

export function listProposals(home: string): Proposal[] {
  const file = homePaths(home).globalProposed;
  if (!existsSync(file)) return [];
  const entries = parseEntries(readFileSync(file, "utf8"));
  const decided = new Map<string, "accepted" | "rejected">();
  for (const entry of entries) {
    const match = DECISION.exec(entry.id);
    if (match?.[1] && match[2] && !decided.has(match[1]))
      decided.set(match[1], match[2] as "accepted" | "rejected");
  }
  const seen = new Set<string>();
  return entries
    .filter((e) => !DECISION.test(e.id) && !seen.has(e.id) && seen.add(e.id))
    .map((e) => ({
      id: e.id,
      title: e.title,
      meta: e.meta,
      body: e.body,
      status: decided.get(e.id) ?? "pending",
    }));
}

/** The pending proposal named by its id or a unique prefix of it. */
function pending(home: string, id: string): Proposal {
  const all = listProposals(home);
  const exact = all.find((p) => p.id === id);
  const matches = exact ? [exact] : all.filter((p) => p.id.startsWith(id));
  if (matches.length === 0)
    throw new ProposalError(`no global memory proposal '${id}' (see 'scifi memory list')`);
  if (matches.length > 1)
    throw new ProposalError(
      `'${id}' names ${matches.length} proposals: ${matches.map((p) => p.id).join(", ")}`,
    );
  const proposal = matches[0] as Proposal;
  if (proposal.status !== "pending")
    throw new ProposalError(`proposal '${proposal.id}' was already ${proposal.status}`);
  return proposal;
}

/** Accept: the proposal's text becomes a global memory entry, and the decision is recorded. */
export async function acceptProposal(home: string, id: string, now = new Date()): Promise<Proposal> {
  const proposal = pending(home, id);
  const paths = homePaths(home);
  const runId = /· run (\S+)/.exec(proposal.meta)?.[1] ?? "unknown";
  const time = now.toISOString();
  await appendEntry(paths.globalMemory, {
    id: proposal.id,
    time,
    runId,
    role: "accepted",
    title: proposal.title,
    body: proposal.body,
  });
  await decide(home, proposal, "accepted", time);
  return { ...proposal, status: "accepted" };
}

/** Reject: only the decision is recorded; the proposal never reaches global memory. */
export async function rejectProposal(home: string, id: string, now = new Date()): Promise<Proposal> {
  const proposal = pending(home, id);
  await decide(home, proposal, "rejected", now.toISOString());
  return { ...proposal, status: "rejected" };
}

async function decide(home: string, proposal: Proposal, decision: "accepted" | "rejected", time: string) {
  await appendEntry(homePaths(home).globalProposed, {
    id: `${proposal.id}#${decision}`,
    time,
    runId: /· run (\S+)/.exec(proposal.meta)?.[1] ?? "unknown",
    role: "human",
    title: `${decision}: ${proposal.id}`,
    body: `Proposal ${proposal.id} was ${decision} with 'scifi memory ${decision === "accepted" ? "accept" : "reject"}'.`,
  });
}
