// Plain SVG charts generated when the report is built: no library, no script, nothing fetched.
// Labels pass through the escaping template like every other string on the page.
import { type Html, html, raw } from "./escape.ts";

export interface Series {
  name: string;
  color: string;
  values: number[];
}

export interface StackedBarsOptions {
  title: string;
  categories: string[];
  series: Series[];
  format: (value: number) => string;
  /** Shown instead of an empty plot when every value is zero. */
  emptyNote?: string;
  /** Per category, where its bar links (an in-page anchor: the records behind it); none: no link. */
  hrefs?: readonly (string | null | undefined)[];
}

const WIDTH = 520;
const HEIGHT = 220;
const PAD = { left: 64, right: 12, top: 12, bottom: 40 };
const PLOT_W = WIDTH - PAD.left - PAD.right;
const PLOT_H = HEIGHT - PAD.top - PAD.bottom;

/** One bar per category, the series stacked on each other. */
export function stackedBars(options: StackedBarsOptions): Html {
  const totals = options.categories.map((_, i) =>
    options.series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0),
  );
  const max = Math.max(0, ...totals);
  if (max === 0) return emptyChart(options.title, options.emptyNote ?? "nothing to plot");
  const slot = PLOT_W / Math.max(1, options.categories.length);
  const barW = Math.max(1, Math.min(48, slot * 0.7));
  const bars: Html[] = [];
  options.categories.forEach((category, i) => {
    let y = PAD.top + PLOT_H;
    const x = PAD.left + i * slot + (slot - barW) / 2;
    const stack: Html[] = [];
    for (const s of options.series) {
      const value = s.values[i] ?? 0;
      if (value <= 0) continue;
      const h = (value / max) * PLOT_H;
      y -= h;
      stack.push(
        html`<rect x="${fixed(x)}" y="${fixed(y)}" width="${fixed(barW)}" height="${fixed(h)}" fill="${s.color}"><title>${category}: ${s.name} ${options.format(value)}</title></rect>`,
      );
    }
    const href = options.hrefs?.[i];
    bars.push(href ? html`<a href="${href}">${stack}</a>` : html`${stack}`);
  });
  const labels = categoryLabels(options.categories, slot);
  return frame(options.title, html`${axis(max, options.format)}${bars}${labels}`, legend(options.series));
}

/** Values in [0, 1] over a sequence (one point per call). */
export function shareLine(title: string, points: { label: string; value: number }[]): Html {
  if (points.length === 0) return emptyChart(title, "no calls");
  const step = points.length > 1 ? PLOT_W / (points.length - 1) : 0;
  const coords = points.map(
    (p, i) => [PAD.left + i * step, PAD.top + PLOT_H * (1 - clamp01(p.value))] as const,
  );
  const path = coords.map(([x, y], i) => `${i === 0 ? "M" : "L"}${fixed(x)} ${fixed(y)}`).join(" ");
  // Dots only when they stay readable; a 2,000-call run is a line.
  const dots =
    points.length <= 200
      ? points.map(
          (p, i) =>
            html`<circle cx="${fixed(coords[i]?.[0] ?? 0)}" cy="${fixed(coords[i]?.[1] ?? 0)}" r="2.5" fill="#2b6cb0"><title>${p.label}: ${pct(p.value)}</title></circle>`,
        )
      : [];
  const line = html`<path d="${path}" fill="none" stroke="#2b6cb0" stroke-width="1.5"/>`;
  const ends = html`<text x="${PAD.left}" y="${HEIGHT - 8}" class="tick">${points[0]?.label}</text><text x="${WIDTH - PAD.right}" y="${HEIGHT - 8}" class="tick" text-anchor="end">${points.at(-1)?.label}</text>`;
  return frame(title, html`${axis(1, pct)}${line}${dots}${ends}`, raw(""));
}

function axis(max: number, format: (v: number) => string): Html {
  const ticks = [0, 0.5, 1].map((f) => {
    const y = PAD.top + PLOT_H * (1 - f);
    return html`<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${fixed(y)}" y2="${fixed(y)}" stroke="#ddd"/><text x="${PAD.left - 6}" y="${fixed(y + 4)}" class="tick" text-anchor="end">${format(max * f)}</text>`;
  });
  return html`${ticks}<line x1="${PAD.left}" x2="${PAD.left}" y1="${PAD.top}" y2="${PAD.top + PLOT_H}" stroke="#888"/>`;
}

function categoryLabels(categories: string[], slot: number): Html {
  // Label at most ~12 categories so the text stays legible on long runs.
  const every = Math.max(1, Math.ceil(categories.length / 12));
  return html`${categories.map((c, i) =>
    i % every === 0
      ? html`<text x="${fixed(PAD.left + i * slot + slot / 2)}" y="${HEIGHT - PAD.bottom + 16}" class="tick" text-anchor="middle">${shortLabel(c)}</text>`
      : "",
  )}`;
}

function legend(series: Series[]): Html {
  return html`<p class="legend">${series.map(
    (s) =>
      html`<span><svg width="10" height="10" aria-hidden="true"><rect width="10" height="10" fill="${s.color}"/></svg> ${s.name}</span> `,
  )}</p>`;
}

function frame(title: string, body: Html, after: Html): Html {
  return html`<figure class="chart"><figcaption>${title}</figcaption><svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${title}"><rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>${body}</svg>${after}</figure>`;
}

function emptyChart(title: string, note: string): Html {
  return html`<figure class="chart empty"><figcaption>${title}</figcaption><p class="muted">${note}</p></figure>`;
}

function shortLabel(label: string): string {
  return label
    .replace(/^iteration /, "it ")
    .replace(/^final review$/, "final")
    .replace(/^outside iterations$/, "other");
}

const fixed = (n: number): string => n.toFixed(1);
const clamp01 = (n: number): number => Math.min(1, Math.max(0, n));
export const pct = (n: number): string => `${(n * 100).toFixed(0)} %`;
