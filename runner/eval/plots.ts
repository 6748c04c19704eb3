// The eval page's plots, plain SVG built when the page is written (no library, no script), in the
// run report's figure frame and CSS classes (runner/report/charts.ts). Every label goes through
// the escaping template: task and model names come from result files and are hostile.
import { pct } from "../report/charts.ts";
import { type Html, html, raw } from "../report/escape.ts";

const WIDTH = 500;
const HEIGHT = 240;
const PAD = { left: 64, right: 30, top: 14, bottom: 56 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;

export const PALETTE = [
  "#2b6cb0",
  "#c05621",
  "#2f855a",
  "#6b46c1",
  "#b83280",
  "#2c7a7b",
  "#975a16",
  "#4a5568",
];
export const STATUS_COLORS: Record<string, string> = { pass: "#1f7a3a", fail: "#b42318", error: "#9a6700" };

export interface RateBar {
  label: string;
  rate: number;
  /** The 95 % interval drawn as the error bar. */
  low: number;
  high: number;
  n: number;
  /** The in-page anchor of the trials behind the bar (`#set-<n>`), if any. */
  href?: string | null;
}

/** One bar per label (pass rate, 0-100 %) with its interval as an error bar. */
export function rateBars(title: string, bars: RateBar[], id: string): Html {
  if (bars.length === 0) return empty(title, "no trial with a verdict yet", id);
  const slot = PLOT_W / bars.length;
  const barW = Math.max(4, Math.min(56, slot * 0.6));
  const marks = bars.map((b, i) => {
    const cx = PAD.left + i * slot + slot / 2;
    const top = yOf(b.rate);
    const [lo, hi] = [yOf(b.low), yOf(b.high)];
    const color = PALETTE[i % PALETTE.length] as string;
    const tip = `${b.label}: ${pct(b.rate)} (95 % interval ${pct(b.low)} to ${pct(b.high)}, n = ${b.n})`;
    return linked(
      b.href,
      html`<g class="bar"><rect x="${fx(cx - barW / 2)}" y="${fx(top)}" width="${fx(barW)}" height="${fx(PAD.top + PLOT_H - top)}" fill="${color}" opacity="0.8"><title>${tip}</title></rect><line class="errorbar" x1="${fx(cx)}" x2="${fx(cx)}" y1="${fx(lo)}" y2="${fx(hi)}" stroke="#111" stroke-width="1.5"/><line x1="${fx(cx - 6)}" x2="${fx(cx + 6)}" y1="${fx(lo)}" y2="${fx(lo)}" stroke="#111" stroke-width="1.5"/><line x1="${fx(cx - 6)}" x2="${fx(cx + 6)}" y1="${fx(hi)}" y2="${fx(hi)}" stroke="#111" stroke-width="1.5"/></g>`,
    );
  });
  return frame(title, id, html`${yAxis(pct, 1)}${marks}${xLabels(bars.map((b) => b.label))}`);
}

export interface ScatterPoint {
  x: number;
  y: number;
  label: string;
  /** Legend entry; points of one series share a colour. */
  series: string;
  /** The in-page anchor of the trials behind the point, if any. */
  href?: string | null;
}

/** Points (x, y in [0, 1]) coloured by series: cost against pass rate. */
export function scatter(
  title: string,
  points: ScatterPoint[],
  options: { id: string; xTitle: string; yTitle: string; xFormat: (v: number) => string },
): Html {
  if (points.length === 0) return empty(title, "nothing to plot", options.id);
  const maxX = Math.max(...points.map((p) => p.x));
  const span = maxX > 0 ? maxX : 1;
  const series = [...new Set(points.map((p) => p.series))];
  const colorOf = (s: string): string => PALETTE[series.indexOf(s) % PALETTE.length] as string;
  const dots = points.map((p) =>
    linked(
      p.href,
      html`<circle class="point" cx="${fx(PAD.left + (p.x / span) * PLOT_W)}" cy="${fx(yOf(p.y))}" r="5" fill="${colorOf(p.series)}" fill-opacity="0.75" stroke="#fff"><title>${p.label}: ${options.xTitle} ${options.xFormat(p.x)}, ${options.yTitle} ${pct(p.y)}</title></circle>`,
    ),
  );
  const xTicks = [0, 0.5, 1].map(
    (f) =>
      html`<text x="${fx(PAD.left + f * PLOT_W)}" y="${PAD.top + PLOT_H + 16}" class="tick" text-anchor="middle">${options.xFormat(span * f)}</text>`,
  );
  const axisTitles = html`<text x="${PAD.left + PLOT_W / 2}" y="${HEIGHT - 10}" class="tick" text-anchor="middle">${options.xTitle}</text>`;
  return frame(
    title,
    options.id,
    html`${yAxis(pct, 1)}${dots}${xTicks}${axisTitles}`,
    legend(series.map((s) => ({ name: s, color: colorOf(s) }))),
  );
}

export interface ParetoPoint {
  label: string;
  /** USD per passed trial; null when nothing passed (then it cannot be placed on the axis). */
  usdPerPass: number | null;
  rate: number;
  /** The rate's 95 % interval, drawn as the error bar. */
  low: number;
  high: number;
  /** The in-page anchor of the trials behind the point, if any. */
  href?: string | null;
}

/**
 * Pass rate against USD per pass, one point per model, with the Pareto frontier: the models no
 * other model beats on both (cheaper per pass and at least as often passing). Models with no pass
 * have no USD per pass and are named under the plot.
 */
export function pareto(
  title: string,
  points: ParetoPoint[],
  id: string,
  format: (v: number) => string,
): Html {
  const placed = points.filter((p): p is ParetoPoint & { usdPerPass: number } => p.usdPerPass !== null);
  const missing = points.filter((p) => p.usdPerPass === null).map((p) => p.label);
  const note = missing.length
    ? html`<p class="muted pareto-missing">No pass, so no USD per pass: ${missing.join(", ")}</p>`
    : raw("");
  if (placed.length === 0) return empty(title, "no model passed a trial: no USD per pass to plot", id);
  const span = Math.max(...placed.map((p) => p.usdPerPass)) * 1.1 || 1;
  const xOf = (v: number) => PAD.left + (v / span) * PLOT_W;
  const frontier = paretoFrontier(placed);
  const line = frontier.map((p) => `${fx(xOf(p.usdPerPass))},${fx(yOf(p.rate))}`).join(" ");
  const names = distinctLabels(
    placed.map((p) => p.label),
    22,
  );
  const marks = placed.map((p, i) => {
    const [cx, cy] = [xOf(p.usdPerPass), yOf(p.rate)];
    const color = PALETTE[i % PALETTE.length] as string;
    const onFrontier = frontier.includes(p);
    return linked(
      p.href,
      html`<g class="pareto-point${onFrontier ? " frontier" : ""}"><line class="errorbar" x1="${fx(cx)}" x2="${fx(cx)}" y1="${fx(yOf(p.low))}" y2="${fx(yOf(p.high))}" stroke="${color}" stroke-width="1.5"/><circle class="point" cx="${fx(cx)}" cy="${fx(cy)}" r="5" fill="${color}" stroke="#fff"><title>${p.label}: ${format(p.usdPerPass)} per pass, pass rate ${pct(p.rate)} (95 % interval ${pct(p.low)} to ${pct(p.high)})${onFrontier ? ", on the frontier" : ""}</title></circle>${pointLabel(cx, cy, names[i] as string)}</g>`,
    );
  });
  const xTicks = [0, 0.5, 1].map(
    (f) =>
      html`<text x="${fx(PAD.left + f * PLOT_W)}" y="${PAD.top + PLOT_H + 16}" class="tick" text-anchor="middle">${format(span * f)}</text>`,
  );
  const axisTitle = html`<text x="${PAD.left + PLOT_W / 2}" y="${HEIGHT - 10}" class="tick" text-anchor="middle">USD per pass (lower is better)</text>`;
  return frame(
    title,
    id,
    html`${yAxis(pct, 1)}<polyline class="frontier" points="${line}" fill="none" stroke="#888" stroke-dasharray="4 3"/>${marks}${xTicks}${axisTitle}`,
    note,
  );
}

/** A mark as a link to the trials behind it (an in-page anchor the page made), or as it is. */
function linked(href: string | null | undefined, mark: Html): Html {
  return href ? html`<a href="${href}">${mark}</a>` : mark;
}

/** A point's name beside it: to its right, or to its left in the right part of the plot (it stays inside). */
function pointLabel(cx: number, cy: number, name: string): Html {
  const left = cx > PAD.left + PLOT_W * 0.6;
  return html`<text x="${fx(left ? cx - 7 : cx + 7)}" y="${fx(cy - 7)}" class="tick" text-anchor="${left ? "end" : "start"}">${name}</text>`;
}

/** The points no other point beats: none cheaper per pass with a rate at least as high. */
export function paretoFrontier<T extends { usdPerPass: number; rate: number }>(points: readonly T[]): T[] {
  const sorted = [...points].sort((a, b) => a.usdPerPass - b.usdPerPass || b.rate - a.rate);
  const out: T[] = [];
  let best = -1;
  for (const p of sorted)
    if (p.rate > best) {
      out.push(p);
      best = p.rate;
    }
  return out;
}

export interface StripPoint {
  category: string;
  value: number;
  status: string;
  label: string;
  /** The in-page anchor of the trial (its row), if any. */
  href?: string | null;
}

/** One column per category, one dot per trial (jittered by order), coloured by status. */
export function strip(title: string, categories: string[], points: StripPoint[], id: string): Html {
  if (points.length === 0) return empty(title, "no trial has ended yet", id);
  const top = integerTop(Math.max(1, ...points.map((p) => p.value)));
  const slot = PLOT_W / Math.max(1, categories.length);
  const seen = new Map<string, number>();
  const dots = points.map((p) => {
    const i = Math.max(0, categories.indexOf(p.category));
    const k = seen.get(p.category) ?? 0;
    seen.set(p.category, k + 1);
    // Spread the dots of one column over 60 % of its slot so repeats with equal values stay visible.
    const offset = ((k % 9) - 4) * Math.min(6, (slot * 0.6) / 9);
    const cx = PAD.left + i * slot + slot / 2 + offset;
    const cy = PAD.top + PLOT_H * (1 - p.value / top);
    return linked(
      p.href,
      html`<circle class="point" cx="${fx(cx)}" cy="${fx(cy)}" r="4" fill="${STATUS_COLORS[p.status] ?? "#555"}" fill-opacity="0.8"><title>${p.label}: ${p.value} (${p.status})</title></circle>`,
    );
  });
  const statuses = Object.entries(STATUS_COLORS).map(([name, color]) => ({ name, color }));
  return frame(
    title,
    id,
    html`${yAxis((v) => v.toFixed(0), top, integerTicks(top))}${dots}${xLabels(categories)}`,
    legend(statuses),
  );
}

/** A count axis: whole steps of at least 1 from 0 up to the top (itself a multiple of the step). */
export function integerTop(max: number): number {
  const step = Math.max(1, Math.ceil(max / 4));
  return step * Math.max(1, Math.ceil(max / step));
}

/** The ticks of a count axis up to `top` (integerTop), as fractions of it: every one a whole number. */
export function integerTicks(top: number): number[] {
  const step = Math.max(1, Math.ceil(top / 4));
  const out: number[] = [];
  for (let v = 0; v <= top; v += step) out.push(v / top);
  return out;
}

function yAxis(format: (v: number) => string, max: number, fractions = [0, 0.5, 1]): Html {
  const ticks = fractions.map((f) => {
    const y = PAD.top + PLOT_H * (1 - f);
    return html`<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${fx(y)}" y2="${fx(y)}" stroke="#ddd"/><text x="${PAD.left - 6}" y="${fx(y + 4)}" class="tick" text-anchor="end">${format(max * f)}</text>`;
  });
  return html`${ticks}<line x1="${PAD.left}" x2="${PAD.left}" y1="${PAD.top}" y2="${PAD.top + PLOT_H}" stroke="#888"/>`;
}

function xLabels(labels: string[]): Html {
  const slot = PLOT_W / Math.max(1, labels.length);
  // At most ~10 labels stay legible; each is cut to what fits its slot (the full name is in the tooltips and tables).
  const every = Math.max(1, Math.ceil(labels.length / 10));
  const chars = Math.max(6, Math.floor((slot * every) / 6));
  const shown = distinctLabels(labels, chars);
  return html`${labels.map((label, i) =>
    i % every === 0
      ? html`<text x="${fx(PAD.left + i * slot + slot / 2)}" y="${PAD.top + PLOT_H + 16}" class="tick" text-anchor="middle">${shown[i]}<title>${label}</title></text>`
      : "",
  )}`;
}

/**
 * Labels cut to `chars`, never two alike where the names differ: a cut that collides keeps the
 * start and the end ("claude-opus…-20260101"), and one that still collides gets its position.
 */
export function distinctLabels(labels: readonly string[], chars: number): string[] {
  const counts = (xs: string[]) =>
    xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>());
  const distinct = (xs: string[], i: number) =>
    (counts(xs).get(xs[i] as string) ?? 0) === 1 ||
    labels.filter((l) => l === labels[i]).length === counts(xs).get(xs[i] as string);
  let out = labels.map((l) => cut(l, chars));
  out = out.map((c, i) => (distinct(out, i) ? c : middleCut(labels[i] as string, chars)));
  return out.map((c, i) => (distinct(out, i) ? c : `${i + 1}: ${middleCut(labels[i] as string, chars - 3)}`));
}

/** The start and the end of a label with "…" between, `chars` long (the scripted suffix kept whole). */
function middleCut(label: string, chars: number): string {
  if (label.length <= chars) return label;
  const suffix = label.endsWith(SCRIPTED_SUFFIX) ? SCRIPTED_SUFFIX : "";
  const body = label.slice(0, label.length - suffix.length);
  const room = Math.max(2, chars - suffix.length - 1);
  const head = Math.ceil(room / 2);
  return `${body.slice(0, head)}…${body.slice(body.length - (room - head))}${suffix}`;
}

/** A label cut to `chars`, keeping a " (scripted)" label whole: a cut never hides it. */
function cut(label: string, chars: number): string {
  if (label.length <= chars) return label;
  const suffix = label.endsWith(SCRIPTED_SUFFIX) ? SCRIPTED_SUFFIX : "";
  return `${label.slice(0, Math.max(1, chars - suffix.length - 1))}…${suffix}`;
}

/** How the page names a scripted model in plain text (plots); tables use a badge. */
export const SCRIPTED_SUFFIX = " (scripted)";

function legend(entries: { name: string; color: string }[]): Html {
  return html`<p class="legend">${entries.map(
    (e) =>
      html`<span><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${e.color}"/></svg> ${e.name}</span> `,
  )}</p>`;
}

function frame(title: string, id: string, body: Html, after: Html = raw("")): Html {
  return html`<figure class="chart" id="${id}"><figcaption>${title}</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${title}"><rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>${body}</svg>${after}</figure>`;
}

function empty(title: string, note: string, id: string): Html {
  return html`<figure class="chart empty" id="${id}"><figcaption>${title}</figcaption><p class="muted">${note}</p></figure>`;
}

const yOf = (rate: number): number => PAD.top + PLOT_H * (1 - Math.min(1, Math.max(0, rate)));
const fx = (n: number): string => n.toFixed(1);
