// Structured log lines: `time event key=value ...` (text) or one JSON object a line (json).
// No rotation here: run under systemd (journald) or redirect with nohup (docs/daemon.md).
export type LogFormat = "text" | "json";

export type Logger = (event: string, fields?: Record<string, unknown>) => void;

export function createLogger(
  format: LogFormat,
  write: (line: string) => void = (l) => process.stdout.write(l),
): Logger {
  return (event, fields = {}) => {
    const time = new Date().toISOString();
    if (format === "json") {
      write(`${JSON.stringify({ time, event, ...fields })}\n`);
      return;
    }
    const parts = Object.entries(fields)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${k}=${textValue(v)}`);
    write(`${time} ${event}${parts.length ? ` ${parts.join(" ")}` : ""}\n`);
  };
}

function textValue(value: unknown): string {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return /[\s"=]/.test(text) ? JSON.stringify(text) : text;
}
