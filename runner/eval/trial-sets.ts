// Every number on the eval page links to the trials it was computed from (issue 40, item 8). The
// page has no script, so this is anchors and CSS: each trial row is `#trial-<id>`; each distinct
// set of trials behind a number is one small list, `<section id="set-<n>" class="trial-set">`,
// hidden until it is the URL's target; a number is `<a href="#set-<n>">`. Sets are deduplicated by
// their members, so a big eval's page grows with the distinct sets, not with its numbers.
//
// The sets are rebuilt here from the trials' result.json files with the statistics' own filters
// (statistics.ts, flags.ts, integrity-stats.ts, impossible.ts): impossible variants apart, errors
// out of every verdict-based figure, in every money figure. A set whose counts disagree with the
// summary's (a summary older than the trials) says so in its list instead of passing silently.
import { type Html, html } from "../report/escape.ts";
import type { EvalSummary, PassStats } from "./summary.ts";
import type { TrialResult } from "./trial-result.ts";

/** Which trials a filter keeps: those with a verdict, the errors, or all (money counts errors). */
export type Kind = "judged" | "errors" | "all";

/** The trials of a set behind a figure, and what the figure claims about them. */
export interface SetSpec {
  /** What the set is, in words (the first figure that names a set names its list). */
  what: string;
  trials: readonly TrialResult[];
  /** The summary's counts for these trials, checked against the set: n (the verdicts it counts), passes. */
  /** `errors`: n counts the set's infrastructure errors instead. */
  expect?: { n: number; passes?: number; errors?: true };
}

export class TrialSets {
  /** The trials every pass rate counts: the plan's possible variants (impossible ones apart). */
  readonly possible: readonly TrialResult[];
  /** The impossible variants' trials (reported apart). */
  readonly impossible: readonly TrialResult[];
  private readonly sets = new Map<string, { n: number; spec: SetSpec; mismatch: string | null }>();

  /** Renders a set's description (labelling scripted models in it, as everywhere). */
  private readonly name: (text: string) => Html;

  constructor(
    trials: readonly TrialResult[],
    summary: EvalSummary,
    name: (text: string) => Html = (text) => html`${text}`,
  ) {
    this.name = name;
    const marked = new Set((summary.impossible?.variants ?? []).map((v) => key(v.task, v.variant)));
    this.possible = trials.filter((r) => !marked.has(key(r.task, r.variant)));
    this.impossible = trials.filter((r) => marked.has(key(r.task, r.variant)));
  }

  /** The possible trials `keep` selects, of one kind. */
  of(
    keep: (r: TrialResult) => boolean,
    kind: Kind,
    from: readonly TrialResult[] = this.possible,
  ): TrialResult[] {
    return from.filter((r) => keep(r) && pick(r, kind));
  }

  /**
   * `content` as a link to the set's list, or, for an empty set, marked `no-trials` with the
   * reason in its title: no number is left without either.
   */
  link(content: Html | string, spec: SetSpec): Html {
    if (spec.trials.length === 0)
      return html`<span class="no-trials" title="no trials behind this figure">${content}</span>`;
    const ids = spec.trials.map((r) => r.trialId).sort();
    const id = ids.join(" ");
    let set = this.sets.get(id);
    if (!set) {
      set = { n: this.sets.size + 1, spec, mismatch: mismatch(spec) };
      this.sets.set(id, set);
    }
    return html`<a class="set" href="#set-${set.n}">${content}</a>`;
  }

  /** `content` linked to the trials behind pass statistics: verdicts for the rate, all for money. */
  stats(
    content: Html | string,
    what: string,
    trials: readonly TrialResult[],
    s: PassStats,
    kind: Kind,
  ): Html {
    const words = {
      all: "every trial (errors paid for)",
      errors: "its infrastructure errors",
      judged: "trials with a verdict",
    };
    return this.link(content, {
      what: `${what}: ${words[kind]}`,
      trials: trials.filter((r) => pick(r, kind)),
      expect: kind === "errors" ? { n: s.errors, errors: true } : { n: s.n, passes: s.passes },
    });
  }

  /** Every set's list, hidden until targeted; each trial links to its row (and its run report there). */
  sections(): Html {
    if (this.sets.size === 0) return html``;
    return html`<div id="trial-sets">${[...this.sets.values()].map(({ n, spec, mismatch }) => {
      const sorted = [...spec.trials].sort((a, b) => a.trialId.localeCompare(b.trialId));
      const count = (s: string) => sorted.filter((r) => r.status === s).length;
      return html`<section id="set-${n}" class="trial-set"><h3>${this.name(spec.what)}</h3><p class="muted">${sorted.length} trials: ${count("pass")} pass, ${count("fail")} fail, ${count("error")} error${mismatch ? html` · <strong class="missing">${mismatch}</strong>` : ""} · <a href="#eval-trials">close</a></p><p class="members">${sorted.map((r) => html`<a class="${r.status}" href="#trial-${r.trialId}">${r.trialId}</a> `)}</p></section>`;
    })}</div>`;
  }
}

/** The CSS the sets need: lists hidden until targeted, then fixed at the bottom of the window. */
export const TRIAL_SETS_CSS = `
.trial-set{display:none}
.trial-set:target{display:block;position:fixed;left:12px;right:12px;bottom:12px;max-height:40vh;overflow:auto;z-index:10;background:#fff;border:1px solid #c9d6e8;border-radius:6px;padding:6px 12px;box-shadow:0 2px 10px rgba(0,0,0,.2);font-size:12px}
.trial-set h3{margin:0 0 4px;font-size:13px}
.trial-set .members a{display:inline-block;margin:1px 6px 1px 0;font-family:monospace}
.trial-set .members a.pass{color:#276749}.trial-set .members a.fail{color:#9b2c2c}.trial-set .members a.error{color:#975a16}
tr.trial:target{background:#fff3c4}
a.set{color:inherit;text-decoration:underline dotted}
`;

function key(task: string, variant: string): string {
  return `${task}\u0000${variant}`;
}

function pick(r: TrialResult, kind: Kind): boolean {
  return kind === "all" || (kind === "errors" ? r.status === "error" : r.status !== "error");
}

/** Why the set's counts differ from the summary's, or null when they agree. */
function mismatch(spec: SetSpec): string | null {
  const e = spec.expect;
  if (!e) return null;
  // A money set holds the errors too; the summary's n counts verdicts only (or errors, for theirs).
  const counted = spec.trials.filter((r) => (r.status === "error") === (e.errors === true));
  const passes = counted.filter((r) => r.status === "pass").length;
  if (counted.length === e.n && (e.passes === undefined || passes === e.passes)) return null;
  const claim = (p: number | undefined, n: number) => (p === undefined ? `${n}` : `${p} / ${n}`);
  return `summary.json counts ${claim(e.passes, e.n)} here, the trials' result files ${claim(e.passes === undefined ? undefined : passes, counted.length)}: the summary was computed before some of these trials ended (the eval rewrites it, and this page, as trials end)`;
}
