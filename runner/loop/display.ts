// Live status of a run: a redrawn block on a TTY (log-update), plain timestamped lines otherwise
// (one per phase change or notable event, so logs stay readable).
import type { RunStatus } from "./status.ts";

export interface StatusDisplay {
  update(status: RunStatus): void;
  done(): void;
}

export async function createDisplay(stream: NodeJS.WriteStream): Promise<StatusDisplay> {
  if (stream.isTTY) {
    const { createLogUpdate } = await import("log-update");
    const draw = createLogUpdate(stream);
    return { update: (s) => draw(renderBlock(s)), done: () => draw.done() };
  }
  let last = "";
  return {
    update(status) {
      const line = plainLine(status);
      if (line === last) return;
      last = line;
      stream.write(`${new Date().toISOString()} ${line}\n`);
    },
    done() {},
  };
}

export function renderBlock(s: RunStatus): string {
  const l = s.limits;
  return [
    `scifi run ${s.runId}`,
    `  iteration ${s.iteration}  phase ${s.phase}${s.node ? `  node ${s.node}` : ""}  step ${s.step}  tool calls ${s.toolCalls}${s.lastTool ? ` (last: ${s.lastTool})` : ""}`,
    `  tokens ${s.tokens}/${l.tokens}  USD ${s.usd.toFixed(4)}/${l.usd}  elapsed ${seconds(s.elapsedMs)}/${l.walltimeSec}s`,
    `  left in pass: ${s.stepsLeft} steps, ${s.toolCallsLeft} tool calls`,
    ...(s.notice ? [`  ${s.notice}`] : []),
  ].join("\n");
}

/**
 * Changes only on phase, node, iteration or notice (a long wait), so a non-TTY log gets a line per
 * phase and per wait, not per token.
 */
export function plainLine(s: RunStatus): string {
  return `run ${s.runId} iteration ${s.iteration} phase ${s.phase}${s.node ? ` node ${s.node}` : ""}${s.notice ? `: ${s.notice}` : ""}`;
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}
