// Structured log lines: `time event key=value ...` (text) or one JSON object a line (json).
// No rotation here: run under systemd (journald) or redirect with nohup (docs/daemon.md).
// A log line never throws: on a closed terminal (SIGHUP, then EIO) the daemon must still stop its
// workers and queue their tasks to resume (std-streams.ts).
import { writeQuietly } from "../std-streams.ts";
import { visible, visibleJson } from "../terminal-text.ts";

export type LogFormat = "text" | "json";

export type Logger = (event: string, fields?: Record<string, unknown>) => void;

export function createLogger(
  format: LogFormat,
  write: (line: string) => void = (l) => writeQuietly(process.stdout, l),
): Logger {
  return (event, fields = {}) => {
    const time = new Date().toISOString();
    if (format === "json") {
      write(`${visibleJson({ time, event, ...fields })}\n`);
      return;
    }
    const parts = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${textValue(v)}`);
    write(`${time} ${event}${parts.length ? ` ${parts.join(" ")}` : ""}\n`);
  };
}

/** A field as one word, or quoted (JSON) with every non-printing code point escaped: task names and reasons come from files an agent could write. */
function textValue(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return /[\s"=]/.test(text) || visible(text) !== text ? visibleJson(text) : text;
}
