// The report header's "why it failed" box: the last failed checks (id, command, output tail) and
// the review's failed items (id, evidence), so the cause is the first thing read, not 2,000 px down.
import type { FailureFirst } from "../run-folder/failure.ts";
import { type Html, html } from "./escape.ts";

export function failureBox(failure: FailureFirst): Html {
  const checks = failure.checks.map(
    (c) =>
      html`<div class="failed-check" data-check="${c.id}"><div><b>failed check <a href="#iteration-${failure.iteration}">${c.id}</a></b> (${c.timedOut ? "timed out" : `exit ${c.exitCode}`})${c.node !== "root" ? html` of ${c.node}` : ""}: <code>${c.command}</code></div><pre class="tail">${c.tail}</pre></div>`,
  );
  const items = failure.items.map((i) => html`<li data-item="${i.id}"><b>${i.id}</b>: ${i.why}</li>`);
  return html`<section class="failure" id="failure"><h2>Why it failed (iteration ${failure.iteration})</h2>${checks}${failure.items.length ? html`<div><b>the review failed</b></div><ul class="failed-items">${items}</ul>` : ""}</section>`;
}
