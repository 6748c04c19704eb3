// Group and global memory as the pre-scan reads them: a bounded view of each file (runner/memory/
// view.ts), never the file itself, with a ref and hash for the tape and a history event naming the
// entries the view drew on (the report lists them). A run without `group:` reads no group memory.

import type { HistoryEvent } from "../../memory/history-events.ts";
import { type MemoryView, readMemoryView } from "../../memory/view.ts";
import { homePaths } from "../../paths.ts";
import { sha256 } from "../../sha256.ts";

export interface SharedView {
  view: MemoryView;
  ref: string;
  sha256: string;
  budget: number;
}

export interface SharedMemory {
  group?: SharedView & { group: string };
  global: SharedView;
}

/** Default budgets when the caller gives none (the site policy's defaults). */
export const DEFAULT_MEMORY_TOKENS = { group: 1500, global: 1000 } as const;

/** Most entry ids a history event names (a much-confirmed suggestion may come from thousands). */
const MAX_EVENT_ENTRIES = 50;

export function sharedMemory(
  home: string,
  group: string | undefined,
  tokens: { group: number; global: number } = DEFAULT_MEMORY_TOKENS,
  before?: string,
): SharedMemory {
  const paths = homePaths(home);
  const shared = (file: string, ref: string, budget: number): SharedView => {
    const view = readMemoryView(file, { budgetTokens: budget, before });
    return { view, ref, sha256: sha256(view.text), budget };
  };
  return {
    ...(group
      ? { group: { group, ...shared(paths.groupMemory(group), `memory:group:${group}`, tokens.group) } }
      : {}),
    global: shared(paths.globalMemory, "memory:global", tokens.global),
  };
}

/** One `memory_view` history event per level whose view is not empty. */
export function memoryViewEvents(shared: SharedMemory, iteration: number, before?: string): HistoryEvent[] {
  const levels = [
    ["group", shared.group],
    ["global", shared.global],
  ] as const;
  return levels.flatMap(([level, s]) =>
    s && s.view.text !== ""
      ? [
          {
            type: "memory_view" as const,
            iteration,
            level,
            ref: s.ref,
            sha256: s.sha256,
            entries: s.view.entries.slice(-MAX_EVENT_ENTRIES),
            entryCount: s.view.entries.length,
            items: s.view.items.length,
            omitted: s.view.omitted,
            tokens: s.view.tokens,
            budget: s.budget,
            ...(before !== undefined ? { before } : {}),
          },
        ]
      : [],
  );
}
