// The fetches of a task's test scripts (fetch-lines.ts) resolved against the sandbox image: each is
// dropped (needed only to fetch), mapped to the image's own tool when the image holds every package
// it needs (asked of the image, image-tools.ts), or named as a reason the task cannot pass here.
import { applyFetches, type Fetch, type Needs, scanFetches } from "./fetch-lines.ts";
import type { ImageProbe } from "./image-tools.ts";
import type { TestFile } from "./task-source.ts";

export interface FetchReport {
  /** `tests/test.sh:4: apt-get update: ... -> dropped`, one per mapped or dropped command. */
  mapped: string[];
  /** `tests/test.sh:9: wget: downloads over the network`, one per command no mapping exists for. */
  unpassable: string[];
  /** Each test file's text with the mapped commands replaced (refused ones left as written). */
  texts: Map<string, string>;
  /** Notes on lines of non-shell test files that name an installer (not read as shell). */
  notes: string[];
}

const SHELL = /\.(sh|bash)$/;
const NETWORKY = /\b(apt-get|apt|pip3?|uv|uvx|curl|wget|npm|conda)\b/;

export function mapFetches(tests: TestFile[], image: string, probe: ImageProbe): FetchReport {
  const report: FetchReport = { mapped: [], unpassable: [], texts: new Map(), notes: [] };
  const scanned: { test: TestFile; fetches: Fetch[] }[] = [];
  for (const test of tests) {
    if (SHELL.test(test.rel) || /^#!.*\b(ba)?sh\b/.test(test.text)) {
      scanned.push({ test, fetches: scanFetches(test.text) });
      continue;
    }
    report.texts.set(test.rel, test.text);
    test.text.split("\n").forEach((line, i) => {
      // Named by program only: the notes sit in the task folder, and the tests are hidden.
      const program = line.trimStart().startsWith("#") ? undefined : NETWORKY.exec(line)?.[1];
      if (program)
        report.notes.push(
          `${test.origin}:${i + 1} names ${program}: if it fetches or installs software it fails, checks run without network`,
        );
    });
  }
  const needs: Needs = { python: [], apt: [] };
  for (const { fetches } of scanned)
    for (const f of fetches)
      if (f.action.kind === "map") {
        needs.python.push(...f.action.needs.python);
        needs.apt.push(...f.action.needs.apt);
      }
  const asked = needs.python.length + needs.apt.length > 0;
  const holds = asked
    ? probe(image, { python: [...new Set(needs.python)], apt: [...new Set(needs.apt)] })
    : { python: new Map<string, string>(), apt: new Set<string>() };
  for (const { test, fetches } of scanned) {
    const replaced: { start: number; end: number; with: string }[] = [];
    for (const f of fetches) {
      const at = `${test.origin}:${f.line}`;
      const a = f.action;
      if (a.kind === "drop") {
        replaced.push({ start: f.start, end: f.end, with: "true" });
        report.mapped.push(`${at}: ${a.what} -> dropped (checks run without network)`);
        continue;
      }
      if (a.kind === "refuse") {
        report.unpassable.push(`${at}: ${a.what}`);
        continue;
      }
      if ("error" in holds) {
        report.unpassable.push(`${at}: ${a.what}: ${holds.error}`);
        continue;
      }
      const missing = [
        ...a.needs.python.filter((p) => !holds.python.has(p)),
        ...a.needs.apt.filter((p) => !holds.apt.has(p)),
      ];
      const optional = missing.filter((m) => a.optional?.plugins.includes(m));
      const required = missing.filter((m) => !optional.includes(m));
      if (required.length > 0) {
        report.unpassable.push(`${at}: ${a.what}: ${image} has no ${required.join(", ")}`);
        continue;
      }
      const versions = a.needs.python
        .filter((p) => holds.python.has(p))
        .map((p) => `${p} ${holds.python.get(p)}`);
      const held = [...versions, ...a.needs.apt.map((p) => `${p} (Debian)`)].join(", ");
      const lacking = optional.length > 0 && a.optional;
      replaced.push({ start: f.start, end: f.end, with: lacking ? lacking.replace : a.replace });
      report.mapped.push(
        `${at}: ${a.what}: ${image} has ${held}${a.replace === "true" ? " -> dropped" : ""}${lacking ? `; ${optional.join(", ")} (a report plugin) it has not: its options are dropped` : ""}`,
      );
    }
    report.texts.set(test.rel, applyFetches(test.text, replaced));
  }
  return report;
}
