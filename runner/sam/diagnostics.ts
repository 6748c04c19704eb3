// Diagnostics: collected (never thrown) so a file reports all its problems at once, and printed
// as `file:line:col: severity: message`, the form editors and CI logs understand.
import type { Diagnostic } from "./types.ts";

export function formatDiagnostic(d: Diagnostic): string {
  return `${d.file}:${d.line}:${d.column}: ${d.severity}: ${d.message}`;
}

/** Line/column lookup for one source text (offsets are UTF-16 indices, columns 1-based). */
export class SourceMap {
  readonly #lineStarts: number[] = [0];

  constructor(text: string) {
    for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) this.#lineStarts.push(i + 1);
  }

  position(offset: number): { line: number; column: number } {
    let low = 0;
    let high = this.#lineStarts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((this.#lineStarts[mid] ?? 0) <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - (this.#lineStarts[low] ?? 0) + 1 };
  }
}

/** Collects the diagnostics of one file; `at` takes a source offset. */
export class DiagnosticSink {
  readonly list: Diagnostic[];
  readonly file: string;
  readonly #map: SourceMap;

  constructor(file: string, text: string, list: Diagnostic[] = []) {
    this.file = file;
    this.#map = new SourceMap(text);
    this.list = list;
  }

  error(offset: number, message: string): void {
    this.list.push({ file: this.file, ...this.#map.position(offset), severity: "error", message });
  }

  warning(offset: number, message: string): void {
    this.list.push({ file: this.file, ...this.#map.position(offset), severity: "warning", message });
  }

  position(offset: number): { line: number; column: number } {
    return this.#map.position(offset);
  }
}

export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}

/** Stable order: files in order of first appearance, then position, then message. */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  const fileRank = new Map<string, number>();
  for (const d of diagnostics) if (!fileRank.has(d.file)) fileRank.set(d.file, fileRank.size);
  return diagnostics.sort(
    (a, b) =>
      (fileRank.get(a.file) ?? 0) - (fileRank.get(b.file) ?? 0) ||
      a.line - b.line ||
      a.column - b.column ||
      (a.message < b.message ? -1 : a.message > b.message ? 1 : 0),
  );
}
