// A critique record as terminal text (`scifi critique <run>`): every model string made visible
// (terminal-text.ts), verified and unverified findings apart, each citation with the line it names.
import { visible } from "../terminal-text.ts";
import type { CheckedFinding, CritiqueRecord } from "./schema.ts";

export function likelyMismatchesText(record: CritiqueRecord): string {
  const likely = record.findings.filter((f) => f.verified && f.severity === "likely_mismatch").length;
  const unverified = record.findings.filter((f) => !f.verified).length;
  return `critique: ${likely} likely mismatch(es) verified on the code, ${unverified} unverified finding(s)`;
}

export function renderCritiqueText(record: CritiqueRecord): string {
  const lines = [`# Critique of ${visible(record.node)} (iteration ${record.iteration})`, ""];
  if (record.failed) lines.push(`No critique: ${visible(record.failed)}`, "");
  const group = (title: string, findings: CheckedFinding[]) => {
    lines.push(`## ${title}`, "");
    if (findings.length === 0) lines.push("(none)", "");
    for (const f of findings) {
      lines.push(`- ${f.severity} ${f.type} at ${visible(f.item)}: ${visible(f.reason)}`);
      lines.push(`  SPEC: ${visible(f.spec)}`, `  CODE: ${visible(f.code)}`);
      for (const c of f.citations)
        lines.push(
          `  ${c.verified ? "verified" : "UNVERIFIED"} ${visible(c.citation.file)}:${c.citation.line}${c.problem ? ` (${visible(c.problem)})` : ""}`,
          ...(c.lines ?? []).map((l) => `    ${String(l.n).padStart(4)}| ${visible(l.text)}`),
        );
    }
    lines.push("");
  };
  group(
    "Findings on verified code",
    record.findings.filter((f) => f.verified),
  );
  group(
    "Unverified findings",
    record.findings.filter((f) => !f.verified),
  );
  lines.push("## As implemented", "");
  for (const item of record.trace.items)
    lines.push(
      `- ${visible(item.item)}: ${visible(item.expression)}`,
      ...item.chain.map((s) => `    <- ${visible(s)}`),
    );
  return `${lines.join("\n")}\n`;
}
