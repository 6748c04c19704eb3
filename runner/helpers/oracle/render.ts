// The oracle report as Markdown (for people) and as stable JSON (for tools: fixed key order,
// no timestamps or run ids, so the same findings always give the same bytes).
import type { OracleReport } from "./schema.ts";

export function oracleJson(report: OracleReport): string {
  const stable = {
    task: report.task,
    sha256: report.sha256,
    mode: report.mode,
    findings: report.findings.map((f) => ({
      phrase: f.phrase,
      category: f.category,
      where: { node: f.where.node, section: f.where.section, file: f.where.file, line: f.where.line },
      why: f.why,
      question: f.question,
      golden: { reading: f.golden.reading, rewrite: f.golden.rewrite },
      silver: { reading: f.silver.reading, rewrite: f.silver.rewrite },
    })),
  };
  return `${JSON.stringify(stable, null, 2)}\n`;
}

const SECTION = { todo: "To-do", expectation: "Expectation" } as const;

export function oracleMarkdown(report: OracleReport): string {
  const head = `# Oracle: ${report.task}\n\n${report.mode === "templated" ? "Templated check" : "Free check"} of the To-do and Expectation (sha256 ${report.sha256.slice(0, 12)}).\n`;
  if (report.findings.length === 0) return `${head}\nNo high-risk ambiguities found.\n`;
  const body = report.findings.map((f, i) =>
    [
      `## ${i + 1}. "${f.phrase}"`,
      "",
      `*${SECTION[f.where.section]} of \`${f.where.node}\`, ${f.where.file}:${f.where.line}; category: ${f.category.replace(/_/g, " ")}*`,
      "",
      `**Why it matters:** ${f.why}`,
      "",
      `**Question:** ${f.question}`,
      "",
      `- **Golden (recommended):** ${f.golden.reading}`,
      `  - rewrite: ${f.golden.rewrite}`,
      `- **Silver (alternative):** ${f.silver.reading}`,
      `  - rewrite: ${f.silver.rewrite}`,
    ].join("\n"),
  );
  return `${head}\n${body.join("\n\n")}\n`;
}
