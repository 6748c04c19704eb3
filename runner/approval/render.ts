// A request as a person reads it before deciding (`scifi approvals`, `scifi approvals show`, the
// terminal prompt of `scifi run`): every field the agent could shape goes through terminal-text's
// escaping, the detail's lines are each marked `  | ` (no content line passes for a listing line),
// and a cut says how many lines are left out and where the whole text is. Every line is folded at
// LISTING_WIDTH columns with a mark on each row (`  |+ ` in the detail, `  + ` elsewhere), tabs
// expanded: a terminal that soft-wrapped a long line would draw its rest as a row of its own, where
// the agent's text could pass for a request header or a `why:` line.
import { foldRow, LISTING_WIDTH, visible, visibleLines } from "../terminal-text.ts";
import type { ApprovalRequest } from "./store.ts";
import { approvalsFile } from "./store.ts";

/** Detail lines a listing shows before it points at `scifi approvals show`. */
export const LISTED_DETAIL_LINES = 60;

export interface RenderOptions {
  /** The scifi home (names the request file in a cut's notice). */
  home: string;
  /** Every line of the detail (`scifi approvals show`); otherwise the first LISTED_DETAIL_LINES. */
  full?: boolean;
}

export function renderRequest(runId: string, request: ApprovalRequest, options: RenderOptions): string[] {
  const id = visible(request.id);
  const run = visible(runId);
  const fold = (line: string) => foldRow(line, { first: "", continuation: "  + ", width: LISTING_WIDTH });
  return [
    ...fold(`${run} ${id}  ${request.action}: ${visible(request.summary)}`),
    ...fold(
      `  why: ${visible(request.why)}; asked ${visible(request.time)}; blocked after ${visible(request.deadline)}`,
    ),
    ...visibleLines(request.detail, {
      prefix: "  | ",
      continuation: "  |+ ",
      width: LISTING_WIDTH,
      ...(options.full ? {} : { max: LISTED_DETAIL_LINES }),
      whole: `scifi approvals show ${run} ${id} (or ${approvalsFile(options.home, runId)})`,
    }),
    ...fold(`  decide: scifi approve ${run} ${id} [--note TEXT] | scifi deny ${run} ${id} --reason TEXT`),
  ];
}
