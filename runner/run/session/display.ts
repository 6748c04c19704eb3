// Live status of a run: a redrawn block on a TTY (log-update), plain timestamped lines otherwise
// (one per phase change or notable event, so logs stay readable). On a TTY, events (a check's
// result, a verdict) are printed above the block as lines that stay, each with its iteration; the
// block is cut to the terminal's width (never wrapped mid-word); an interaction (an approval
// prompt) suspends it, and the run's end clears it so the outcome is what remains.
import { visible } from "../../terminal-text.ts";
import type { RunStatus } from "./status.ts";

export interface StatusDisplay {
  update(status: RunStatus): void;
  /** Takes the live block off the screen until `resume` (a prompt is shown meanwhile). */
  suspend(): void;
  resume(): void;
  /** A line that stays (above the block on a TTY). */
  say(line: string): void;
  /** The run ended: the block is removed, so what follows (the outcome) replaces it. */
  done(): void;
}

export async function createDisplay(stream: NodeJS.WriteStream): Promise<StatusDisplay> {
  // A terminal that reports no size (0x0: some CI runners, `script`, serial consoles) would get a
  // blank block from log-update: it gets lines too.
  if (stream.isTTY && (stream.columns ?? 0) > 0 && (stream.rows ?? 0) > 0) {
    const { createLogUpdate } = await import("log-update");
    const draw = createLogUpdate(stream);
    let last: RunStatus | undefined;
    let suspended = false;
    let ended = false;
    const width = () => Math.max(20, (stream.columns ?? 80) - 1);
    const redraw = () => {
      if (last && !suspended && !ended) draw(fitBlock(renderBlock(last), width()));
    };
    const say = (line: string) => {
      draw.clear();
      stream.write(`${wrapWords(line, width(), "    ").join("\n")}\n`);
      redraw();
    };
    return {
      update: (s) => {
        last = s;
        if (s.result) say(eventLine(s));
        else redraw();
      },
      suspend: () => {
        suspended = true;
        draw.clear();
      },
      resume: () => {
        suspended = false;
        redraw();
      },
      say,
      done: () => {
        ended = true;
        draw.clear();
        draw.done();
      },
    };
  }
  let last = "";
  return {
    update(status) {
      if (status.result) {
        stream.write(`${new Date().toISOString()} run ${status.runId} ${eventLine(status)}\n`);
        return;
      }
      const line = plainLine(status);
      if (line === last) return;
      last = line;
      stream.write(`${new Date().toISOString()} ${line}\n`);
    },
    suspend() {},
    resume() {},
    say(line) {
      stream.write(`${new Date().toISOString()} ${line}\n`);
    },
    done() {},
  };
}

/** An event with the iteration it belongs to: `iteration 2  check root/check-1 FAILED (exit 1)`. */
export function eventLine(s: RunStatus): string {
  return `iteration ${s.iteration} ${visible(s.result ?? "")}`;
}

export function renderBlock(s: RunStatus): string {
  const l = s.limits;
  return [
    `scifi run ${s.runId}`,
    `  iteration ${s.iteration}  phase ${s.phase}${s.node ? `  node ${visible(s.node)}` : ""}  step ${s.step}  tool calls ${s.toolCalls}${s.lastTool ? ` (last: ${visible(s.lastTool)})` : ""}`,
    `  tokens ${s.tokens}/${l.tokens}  USD ${s.usd.toFixed(4)}/${l.usd}  elapsed ${seconds(s.elapsedMs)}/${l.walltimeSec}s`,
    `  left in pass: ${s.stepsLeft} steps, ${s.toolCallsLeft} tool calls`,
    ...(s.notice ? [`  ${visible(s.notice)}`] : []),
  ].join("\n");
}

/** Each line of the block cut to `width` characters, with an ellipsis where it is cut. */
export function fitBlock(block: string, width: number): string {
  return block
    .split("\n")
    .map((line) => ([...line].length > width ? `${[...line].slice(0, width - 1).join("")}…` : line))
    .join("\n");
}

/** A line wrapped at spaces to `width` (a word longer than the width is cut), later lines indented. */
export function wrapWords(line: string, width: number, indent = ""): string[] {
  const out: string[] = [];
  let current = "";
  for (const word of line.split(" ")) {
    const candidate = current === "" ? word : `${current} ${word}`;
    if ([...candidate].length <= width || current === "") {
      current = candidate;
      continue;
    }
    out.push(current);
    current = `${indent}${word}`;
  }
  out.push(current);
  return out.flatMap((l) => {
    const chars = [...l];
    const pieces: string[] = [];
    for (let i = 0; i < chars.length; i += width) pieces.push(chars.slice(i, i + width).join(""));
    return pieces.length ? pieces : [""];
  });
}

/**
 * Changes only on phase, node, iteration or notice (a long wait), so a non-TTY log gets a line per
 * phase and per wait, not per token.
 */
export function plainLine(s: RunStatus): string {
  return `run ${s.runId} iteration ${s.iteration} phase ${s.phase}${s.node ? ` node ${visible(s.node)}` : ""}${s.notice ? `: ${visible(s.notice)}` : ""}`;
}

function seconds(ms: number): number {
  return Math.round(ms / 1000);
}
