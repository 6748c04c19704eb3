// The report's section on what the run changed in its task folder: per file what happened, its
// sizes and hash, and its diff (syntax-highlighted by runner/report/highlight.ts, every token
// escaped again here), image or first PDF page.
import type { ChangeSetView, FileChangeView } from "./changes-view.ts";
import { type Html, html, raw } from "./escape.ts";
import type { Segment } from "./highlight.ts";
import type { ReportModel } from "./model.ts";

export function changesSection(model: ReportModel): Html {
  const view = model.changes;
  const overall = view.overall
    ? changeSet(view.overall, true)
    : html`<p class="muted" id="changes-missing">${view.missing ?? "no changes recorded"}</p>`;
  const perIteration =
    view.iterations.length > 0
      ? html`<details class="changes-iterations"><summary>By iteration (${view.iterations.length})</summary>${view.iterations.map(
          (set) => changeSet(set, false),
        )}</details>`
      : "";
  return html`<section id="changes"><h2>Changes in the task folder</h2>${overall}${perIteration}</section>`;
}

function changeSet(set: ChangeSetView, open: boolean): Html {
  const counts = (kind: string): number => set.files.filter((f) => f.kind === kind).length;
  const head = html`<p class="change-summary">${set.label}: ${counts("created")} created, ${counts("changed")} changed, ${counts("deleted")} deleted${set.partial ? html` <span class="badge fail">partial: ${set.partial}</span>` : ""}</p>`;
  if (set.files.length === 0) return html`${head}<p class="muted">no files changed</p>`;
  return html`<div class="change-set">${head}<table class="changes"><tr><th>File</th><th>What</th><th>Size</th><th>sha256</th></tr>${set.files.map(
    (f) =>
      html`<tr class="change ${f.kind}" data-path="${f.path}"><td><code>${f.path}</code></td><td><span class="badge ${f.kind === "deleted" ? "fail" : "pass"}">${f.kind}</span>${f.type !== "file" ? html` ${f.type}` : ""}${f.diff ? html` <span class="added">+${f.diff.added}</span> <span class="removed">-${f.diff.removed}</span>` : ""}</td><td>${sizes(f)}</td><td class="sha">${(f.shaAfter ?? f.shaBefore ?? "").slice(0, 16)}</td></tr>`,
  )}</table>${set.files.map((f) => fileBody(f, open))}</div>`;
}

function sizes(f: FileChangeView): string {
  if (f.kind === "created") return bytes(f.sizeAfter ?? 0);
  if (f.kind === "deleted") return bytes(f.sizeBefore ?? 0);
  return `${bytes(f.sizeBefore ?? 0)} → ${bytes(f.sizeAfter ?? 0)}`;
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function fileBody(f: FileChangeView, open: boolean): Html {
  const what =
    f.linkTarget !== undefined
      ? html`<p class="muted">symbolic link to <code>${f.linkTarget}</code> (never followed)</p>`
      : "";
  const image = f.image
    ? html`<img class="produced" alt="${f.path}" src="data:${f.image.mime};base64,${f.image.base64}">`
    : "";
  const pdf = f.pdfPage
    ? html`<figure class="pdf-page"><img class="produced pdf-page" alt="first page of ${f.path}" src="data:${f.pdfPage.mime};base64,${f.pdfPage.base64}"><figcaption>First page of the PDF (rendered by pdftoppm in a sandbox without network)</figcaption></figure>`
    : f.pdfNote
      ? html`<p class="muted pdf-note">First page of the PDF not shown: ${f.pdfNote}</p>`
      : "";
  const note = f.note
    ? html`<p class="muted">${f.note}${f.shaAfter ? html` (sha256 ${f.shaAfter})` : ""}</p>`
    : "";
  const diff = f.diff ? diffTable(f) : "";
  if (!what && !image && !pdf && !note && !diff) return html``;
  // Large diffs start folded; small ones and images start open on the whole-run view.
  const startOpen =
    open &&
    (image !== "" ||
      f.pdfPage !== undefined ||
      (f.diff !== undefined && f.diff.added + f.diff.removed <= 200));
  return html`<details class="change-file"${startOpen ? raw(" open") : ""} data-path="${f.path}"><summary><code>${f.path}</code> ${f.kind}</summary>${what}${image}${pdf}${note}${diff}</details>`;
}

function diffTable(f: FileChangeView): Html {
  const diff = f.diff;
  if (!diff) return html``;
  return html`<table class="diff"${diff.lang ? html` data-lang="${diff.lang}"` : ""}>${diff.hunks.map(
    (h, i) =>
      html`${i > 0 ? html`<tr class="gap"><td colspan="3">…</td></tr>` : ""}${h.lines.map(
        (l) =>
          html`<tr class="${l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx"}"><td class="ln">${l.a ?? ""}</td><td class="ln">${l.b ?? ""}</td><td><pre>${l.op}${l.hl ? segments(l.hl) : highlight(l.text)}</pre></td></tr>`,
      )}`,
  )}</table>${diff.cut > 0 ? html`<p class="muted">${diff.cut} more diff line(s) not shown</p>` : ""}`;
}

/** A line highlighted by runner/report/highlight.ts: its text and scope names escaped here again. */
function segments(list: Segment[]): Html {
  return html`${list.map((s) =>
    typeof s === "string" ? html`${s}` : html`<span class="${s.scope}">${segments(s.children)}</span>`,
  )}`;
}

/**
 * Light colouring of a file in no known language: numbers and comments (escaped first; only our
 * spans are markup).
 */
function highlight(text: string): Html {
  const line = text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
  const comment = /(^\s*(#|!|\/\/|%|--).*$)/.exec(line);
  if (comment) return html`<span class="hl-comment">${line}</span>`;
  const parts: Html[] = [];
  let last = 0;
  for (const m of line.matchAll(/-?\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b/g)) {
    parts.push(html`${line.slice(last, m.index)}`, html`<span class="hl-num">${m[0]}</span>`);
    last = (m.index ?? 0) + m[0].length;
  }
  parts.push(html`${line.slice(last)}`);
  return html`${parts}`;
}
