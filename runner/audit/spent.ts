// What a run has really spent, read back from its audit tape: the tape holds every call (failed ones
// too) with its usage and cost, written before the call returned, so it is ahead of any checkpoint.
import { existsSync } from "node:fs";
import { readTape } from "./verify.ts";

export interface TapeSpent {
  usd: number;
  tokens: number;
  calls: number;
  /** Time of the tape's last record (ISO), when it has one. */
  lastTime?: string;
}

export function spentOnTape(path: string): TapeSpent {
  const spent: TapeSpent = { usd: 0, tokens: 0, calls: 0 };
  if (!existsSync(path)) return spent;
  for (const record of readTape(path)) {
    spent.lastTime = record.time;
    if (record.kind !== "call") continue;
    const u = record.usage;
    spent.usd += record.costUsd;
    spent.tokens += u.input + u.output + u.cacheRead + u.cacheWrite;
    spent.calls++;
  }
  return spent;
}
