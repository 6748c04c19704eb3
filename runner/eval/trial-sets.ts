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
  /** What the set is, in words (a list names every figure that links to it). */
  what: string;
  trials: readonly TrialResult[];
  /**
   * The summary's counts for these trials, checked against the set: n (the verdicts it counts)
   * and passes; with `errors`, n counts the set's infrastructure errors instead.
   */
  expect?: { n: number; passes?: number; errors?: true };
}

export class TrialSets {
  /** The trials every pass rate counts: the plan's possible variants (impossible ones apart). */
  readonly possible: readonly TrialResult[];
  /** The impossible variants' trials (reported apart). */
  readonly impossible: readonly TrialResult[];
  /** By members: the set's number, its trials, every description that named it, what disagrees. */
  private readonly sets = new Map<
    string,
    { n: number; trials: readonly TrialResult[]; whats: Set<string>; mismatches: Set<string> }
  >();

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
    const href = this.href(spec);
    if (href !== null) return html`<a class="set" href="${href}">${content}</a>`;
    // No trial on the page, though the summary may count some (their result files are gone).
    const counted = spec.expect?.n ?? 0;
    return html`<span class="no-trials${counted ? " missing" : ""}" title="${counted ? `summary.json counts ${counted} trials here, but none has a result file on this page` : "no trials behind this figure"}">${content}</span>`;
  }

  /** The set's anchor (`#set-<n>`, registering it once by its members), or null when it is empty. */
  href(spec: SetSpec): string | null {
    if (spec.trials.length === 0) return null;
    // Keyed by the sorted ids; the page's trials come sorted and every filter keeps their order,
    // so sorting is rarely needed (a big eval has a thousand figures).
    const ids = spec.trials.map((r) => r.trialId);
    if (ids.some((x, i) => i > 0 && (ids[i - 1] as string) > x)) ids.sort();
    const id = ids.join(" ");
    let set = this.sets.get(id);
    if (!set) {
      set = { n: this.sets.size + 1, trials: spec.trials, whats: new Set(), mismatches: new Set() };
      this.sets.set(id, set);
    }
    // One list, many figures: it names each (what) and says where a figure's summary disagrees.
    set.whats.add(spec.what);
    const wrong = mismatch(spec);
    if (wrong) set.mismatches.add(`${spec.what} — ${wrong}`);
    return `#set-${set.n}`;
  }

  /** `content` linked to the trials behind pass statistics: verdicts for the rate, all for money. */
  stats(
    content: Html | string,
    what: string,
    trials: readonly TrialResult[],
    s: PassStats,
    kind: Kind,
  ): Html {
    return this.link(content, statsSpec(what, trials, s, kind));
  }

  /** The anchor of the trials behind pass statistics (a plot's mark), or null when there are none. */
  statsHref(what: string, trials: readonly TrialResult[], s: PassStats, kind: Kind): string | null {
    return this.href(statsSpec(what, trials, s, kind));
  }

  /**
   * Every set's list, hidden until targeted: its trials grouped by cell (the trial id less its
   * repeat, `<task>.<variant>.<model slug>`, as the trials table names it), each repeat a link to
   * its row (the run report's link is there). Grouping keeps a big eval's page small: a member
   * costs its id once, in the link, not again as its text.
   */
  sections(): Html {
    if (this.sets.size === 0) return html``;
    // `close` targets an empty fixed element: no list is the target, and the page does not move.
    return html`<div id="trial-sets"><span id="set-none"></span>${[...this.sets.values()].map(
      ({ n, trials, whats, mismatches }) => {
        const sorted = [...trials].sort(
          (a, b) =>
            a.task.localeCompare(b.task) ||
            a.variant.localeCompare(b.variant) ||
            a.model.localeCompare(b.model) ||
            a.repeat - b.repeat,
        );
        const count = (s: string) => sorted.filter((r) => r.status === s).length;
        const members: Html[] = [];
        sorted.forEach((r, i) => {
          const prev = sorted[i - 1];
          if (!prev || prev.task !== r.task || prev.variant !== r.variant || prev.model !== r.model)
            members.push(html`${i ? html`<br>` : ""}<span class="cell">${cellOf(r.trialId)}</span>`);
          members.push(
            html` <a${r.status === "pass" ? "" : html` class="m-${r.status}"`} href="#trial-${r.trialId}">r${r.repeat}</a>`,
          );
        });
        return html`<section id="set-${n}" class="trial-set"><h3>${[...whats].map((w, i) => html`${i ? " · " : ""}${this.name(w)}`)}</h3><p class="muted">${sorted.length} trials: ${count("pass")} pass, ${count("fail")} fail, ${count("error")} error · <a href="#set-none">close</a></p>${[...mismatches].map((m) => html`<p class="missing">${this.name(m)}</p>`)}<p class="members">${members}</p></section>`;
      },
    )}</div>`;
  }
}

/** The CSS the sets need: lists hidden until targeted, then fixed at the bottom of the window. */
export const TRIAL_SETS_CSS = `
.trial-set{display:none}
#set-none{position:fixed;top:0;left:0}
.trial-set:target{display:block;position:fixed;left:12px;right:12px;bottom:12px;max-height:40vh;overflow:auto;z-index:10;background:#fff;border:1px solid #c9d6e8;border-radius:6px;padding:6px 12px;box-shadow:0 2px 10px rgba(0,0,0,.2);font-size:12px}
.trial-set h3{margin:0 0 4px;font-size:13px}
.trial-set .members{line-height:1.6}
.trial-set .members a{font-family:monospace;color:#276749}.trial-set .members a.m-fail{color:#9b2c2c}.trial-set .members a.m-error{color:#975a16;font-style:italic}
.trial-set .cell{color:var(--muted)}
tr.trial:target{background:#fff3c4}
a.set{color:inherit;text-decoration:underline dotted}
`;

function statsSpec(what: string, trials: readonly TrialResult[], s: PassStats, kind: Kind): SetSpec {
  const words = {
    all: "every trial (errors paid for)",
    errors: "its infrastructure errors",
    judged: "trials with a verdict",
  };
  return {
    what: `${what} — ${words[kind]}`,
    trials: trials.filter((r) => pick(r, kind)),
    expect: kind === "errors" ? { n: s.errors, errors: true } : { n: s.n, passes: s.passes },
  };
}

/** A trial id less its `.r<repeat>`: the cell's part of it. */
function cellOf(trialId: string): string {
  return trialId.replace(/\.r[0-9]+$/, "");
}

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
  return `summary.json counts ${claim(e.passes, e.n)} here, the trials' result files ${claim(e.passes === undefined ? undefined : passes, counted.length)}: the summary was written before some of these trials ended, or a result file changed since (scifi eval --resume <id> writes both again)`;
}
