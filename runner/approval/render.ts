// A request as a person reads it before deciding (`scifi approvals`, `scifi approvals show`, the
// terminal prompt of `scifi run`): every field the agent could shape goes through terminal-text's
// escaping, the detail's lines are each marked `  | ` (no content line passes for a listing line),
// and a cut says how many lines are left out and where the whole text is.
import { visible, visibleLines } from "../terminal-text.ts";
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
  return [
    `${run} ${id}  ${request.action}: ${visible(request.summary)}`,
    `  why: ${visible(request.why)}; asked ${visible(request.time)}; blocked after ${visible(request.deadline)}`,
    ...visibleLines(request.detail, {
      prefix: "  | ",
      ...(options.full ? {} : { max: LISTED_DETAIL_LINES }),
      whole: `scifi approvals show ${run} ${id} (or ${approvalsFile(options.home, runId)})`,
    }),
    `  decide: scifi approve ${run} ${id} [--note TEXT] | scifi deny ${run} ${id} --reason TEXT`,
  ];
}
