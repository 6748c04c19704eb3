// The report's Critique section: per critique, each item -> its expression -> its chain -> the cited
// lines with the code the runner read there (verified or not, and why), the definition summary, and
// the findings with type and severity, verified and unverified apart. Everything in it is model
// text or agent code: all of it goes through the one escape (escape.ts).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CheckedFinding, CitationCheck, CritiqueRecord } from "../critique/schema.ts";
import { type Html, html } from "./escape.ts";

/** Most critique records a report reads (one per passed iteration); more are said to be left out. */
const MAX_RECORDS = 50;
const MAX_RECORD_BYTES = 4 * 1024 * 1024;

/** The run folder's critique records (critique/itN.json), in iteration order; unreadable ones named. */
export function loadCritiques(runDir: string): { records: CritiqueRecord[]; problems: string[] } {
  const dir = join(runDir, "critique");
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => /^(it|after)\d+\.json$/.test(n));
  } catch {
    return { records: [], problems: [] };
  }
  // The run's own critiques by iteration, then those of `scifi critique <run>` in order.
  const order = (n: string) => (n.startsWith("it") ? 0 : 1e9) + Number(n.replace(/\D/g, ""));
  names.sort((a, b) => order(a) - order(b));
  const problems: string[] = [];
  if (names.length > MAX_RECORDS)
    problems.push(`${names.length - MAX_RECORDS} later critique record(s) not shown`);
  const records: CritiqueRecord[] = [];
  for (const name of names.slice(0, MAX_RECORDS)) {
    try {
      const text = readFileSync(join(dir, name), "utf8");
      if (text.length > MAX_RECORD_BYTES) throw new Error(`larger than ${MAX_RECORD_BYTES} bytes`);
      records.push(JSON.parse(text) as CritiqueRecord);
    } catch (error) {
      problems.push(`${name}: ${(error as Error).message}`);
    }
  }
  return { records, problems };
}

/** What the morning-after line says: verified likely mismatches left in the run's last critique of each node. */
export function likelyMismatches(records: readonly CritiqueRecord[]): { likely: number; unverified: number } {
  const last = new Map<string, CritiqueRecord>();
  for (const r of records) last.set(r.node, r);
  let likely = 0;
  let unverified = 0;
  for (const r of last.values()) {
    likely += r.findings.filter((f) => f.verified && f.severity === "likely_mismatch").length;
    unverified += r.findings.filter((f) => !f.verified).length;
  }
  return { likely, unverified };
}

export function critiqueSection(critiques: { records: CritiqueRecord[]; problems: string[] }): Html {
  if (critiques.records.length === 0 && critiques.problems.length === 0) return html``;
  const { likely, unverified } = likelyMismatches(critiques.records);
  return html`<h2 id="critique">Critique</h2>
<p class="muted">A model's reading of the delivered code (tracer and critique), checked by the runner only where it cites lines: a citation is verified when the file is in the final task folder, the lines exist and the quoted expression is on them.</p>
<p id="critique-summary">${likely} verified likely mismatch(es), ${unverified} unverified finding(s) in the last critique of each node.</p>
${critiques.problems.map((p) => html`<p class="muted">${p}</p>`)}
${critiques.records.map(recordView)}`;
}

function recordView(r: CritiqueRecord): Html {
  const verified = r.findings.filter((f) => f.verified);
  const unverified = r.findings.filter((f) => !f.verified);
  return html`<section class="critique" id="critique-${r.iteration}">
<h3>Iteration ${r.iteration}, node ${r.node} <span class="muted">(mode ${r.mode}; ${effectText(r.effect)}${r.packs.length ? `; domain packs: ${r.packs.join(", ")}` : ""})</span></h3>
${r.failed ? html`<p class="status failed">No critique: ${r.failed}</p>` : ""}
<h4>Findings on verified code</h4>${findingList(verified)}
<h4>Unverified findings (they rest only on citations that do not hold)</h4>${findingList(unverified)}
<h4>As implemented (the tracer)</h4>
<table class="trace"><tr><th>item</th><th>expression</th><th>chain</th><th>lines</th></tr>${r.trace.items.map(
    (i) =>
      html`<tr><td>${i.item}</td><td><code>${i.expression}</code></td><td>${chainList(i.chain)}</td><td>${citations(r.traceChecks[`item:${i.item}`] ?? [])}</td></tr>`,
  )}</table>
<h4>Definition summary</h4>
<table class="trace"><tr><th>name</th><th>kind</th><th>definition</th><th>chain</th><th>lines</th></tr>${r.trace.quantities.map(
    (q) =>
      html`<tr><td>${q.name}</td><td>${q.kind.replace("_", " ")}</td><td><code>${q.definition}</code></td><td>${chainList(q.chain)}</td><td>${citations(r.traceChecks[`quantity:${q.name}`] ?? [])}</td></tr>`,
  )}</table>
</section>`;
}

function effectText(effect: CritiqueRecord["effect"]): string {
  return {
    none: "the verdict stood",
    sent_back: "sent back to the work agent",
    approved: "a person accepted it",
    denied: "a person sent it back",
  }[effect];
}

function findingList(findings: readonly CheckedFinding[]): Html {
  if (findings.length === 0) return html`<p class="muted">(none)</p>`;
  return html`<ul class="findings">${findings.map(
    (
      f,
    ) => html`<li class="finding ${f.severity}"><strong>${f.severity.replace("_", " ")}</strong> <code>${f.type}</code> at ${f.item}${f.trace.length ? html` <span class="muted">(trace: ${f.trace.join(", ")})</span>` : ""}
<p>${f.reason}</p>
<p><span class="muted">SPEC</span> ${f.spec}<br><span class="muted">CODE</span> <code>${f.code}</code>${f.fix ? html`<br><span class="muted">FIX</span> ${f.fix}` : ""}</p>
${citations(f.citations)}</li>`,
  )}</ul>`;
}

function chainList(chain: readonly string[]): Html {
  return html`${chain.map((step, i) => html`${i > 0 ? html`<br>` : ""}${step}`)}`;
}

function citations(checks: readonly CitationCheck[]): Html {
  if (checks.length === 0) return html`<span class="muted">(no citation)</span>`;
  return html`${checks.map((c) => {
    const { file, line, end_line } = c.citation;
    const where = `${file}:${line}${end_line && end_line !== line ? `-${end_line}` : ""}`;
    return html`<div class="citation ${c.verified ? "verified" : "unverified"}"><span class="status ${c.verified ? "passed" : "failed"}">${c.verified ? "verified" : "unverified"}</span> ${where}${c.problem ? html` <span class="muted">(${c.problem})</span>` : ""}
${c.lines?.length ? html`<pre>${c.lines.map((l) => `${String(l.n).padStart(4)}| ${l.text}`).join("\n")}</pre>` : ""}${c.verified ? "" : html`<div class="muted">quoted: <code>${c.citation.quote}</code></div>`}</div>`;
  })}`;
}
