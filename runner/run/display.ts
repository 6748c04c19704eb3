// Live status of a run: a redrawn block on a TTY (log-update), plain timestamped lines otherwise
// (one per phase change or notable event, so logs stay readable).
import type { RunStatus } from "./status.ts";

export interface StatusDisplay {
  update(status: RunStatus): void;
  done(): void;
}

export async function createDisplay(stream: NodeJS.WriteStream): Promise<StatusDisplay> {
  // A terminal that reports no size (0x0: some CI runners, `script`, serial consoles) would get a
  // blank block from log-update: it gets lines too.
  if (stream.isTTY && (stream.columns ?? 0) > 0 && (stream.rows ?? 0) > 0) {
    const { createLogUpdate } = await import("log-update");
    const draw = createLogUpdate(stream);
    const results: string[] = [];
    return {
      update: (s) => {
        // Results stay under the block (the last few), so a failed check is seen while the run goes on.
        if (s.result) results.push(s.result);
        draw([renderBlock(s), ...results.slice(-5).map((r) => `  ${r}`)].join("\n"));
      },
      done: () => draw.done(),
    };
  }
  let last = "";
  return {
    update(status) {
      if (status.result) {
        stream.write(
          `${new Date().toISOString()} run ${status.runId} iteration ${status.iteration} ${status.result}\n`,
        );
        return;
      }
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
