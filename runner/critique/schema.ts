// The tracer's and the critique's replies, in a fixed structured form (zod, like the review's verdict),
// and the record the runner keeps of one critique: trace, findings, and what the runner verified of
// their citations (cite.ts). The formats are documented in docs/critique.md.
import { z } from "zod";

/** A `file:line` reference in the final task folder, with the expression the tracer says is there. */
export const Citation = z
  .object({
    file: z.string().min(1).describe("path relative to the task folder, e.g. analysis.py"),
    line: z.number().int().min(1).describe("first line (1-based)"),
    end_line: z.number().int().min(1).optional().describe("last line when the expression spans lines"),
    quote: z
      .string()
      .min(1)
      .describe("the expression exactly as it stands on those lines (whitespace may differ)"),
  })
  .strict();
export type Citation = z.infer<typeof Citation>;

export const QUANTITY_KINDS = ["selected_collection", "composite_object", "scalar"] as const;

/** One SAM item (Expectation `root/e1`, To-do `root/t1`) as implemented. */
const TraceItem = z
  .object({
    item: z.string().min(1).describe("the item id, e.g. root/e1 or root/t2"),
    expression: z.string().min(1).describe("the code expression that implements the item"),
    chain: z
      .array(z.string().min(1))
      .describe("the upstream chain of definitions, each step 'name -> what it is computed from'"),
    refs: z.array(Citation).describe("where the expression and its chain are in the code"),
  })
  .strict();

/** One named quantity of the program (a collection, a composite object, a scalar) and its definition. */
const TraceQuantity = z
  .object({
    name: z.string().min(1),
    definition: z.string().min(1).describe("the expression that defines it"),
    kind: z.enum(QUANTITY_KINDS),
    chain: z.array(z.string().min(1)),
    refs: z.array(Citation),
  })
  .strict();

export const Trace = z
  .object({
    items: z.array(TraceItem).describe("one entry per Expectation and To-do item the code implements"),
    quantities: z.array(TraceQuantity).describe("the definition summary: every named quantity"),
  })
  .strict();
export type Trace = z.infer<typeof Trace>;
export type TraceItem = z.infer<typeof TraceItem>;
export type TraceQuantity = z.infer<typeof TraceQuantity>;

export const FINDING_TYPES = [
  "composite_violation",
  "definition_mismatch",
  "missing_implementation",
  "specification_ambiguity",
  "extra_behaviour",
  "generator_induced_bias",
] as const;
export type FindingType = (typeof FINDING_TYPES)[number];

export const SEVERITIES = ["likely_mismatch", "ambiguity", "low"] as const;
export type Severity = (typeof SEVERITIES)[number];

const Finding = z
  .object({
    type: z.enum(FINDING_TYPES),
    severity: z.enum(SEVERITIES),
    item: z.string().min(1).describe("the SAM item id the finding is about"),
    trace: z
      .array(z.string().min(1))
      .describe("trace entries it rests on: item ids or quantity names as they appear in the trace"),
    spec: z.string().min(1).describe("what the SAM asks, quoted"),
    code: z.string().min(1).describe("what the code does, quoted"),
    reason: z.string().min(1),
    fix: z.string().optional().describe("what the work agent should change (used when the mode is block)"),
    refs: z.array(Citation).default([]).describe("further citations of the finding's own"),
  })
  .strict();
export type Finding = z.infer<typeof Finding>;

export const CritiqueReply = z.object({ findings: z.array(Finding) }).strict();
export type CritiqueReply = z.infer<typeof CritiqueReply>;

/** What the runner found at a citation: verified, or why not; the cited lines as read (bounded). */
export interface CitationCheck {
  citation: Citation;
  verified: boolean;
  /** Why it did not verify (no such file, a link, no such line, the quote is not on the lines). */
  problem?: string;
  /** The cited lines as the runner read them, with their numbers (absent when the file was not read). */
  lines?: { n: number; text: string }[];
  /** The path inside the task folder the cited path is a link to (the citation may still verify). */
  link?: string;
  /** Set when it did not verify because of the folder's shape (a link out, a FIFO, a file past the window). */
  shape?: boolean;
}

export interface CheckedFinding extends Finding {
  /** Every citation the finding rests on (its trace entries' and its own), as checked. */
  citations: CitationCheck[];
  /** False when none of its citations verified (or it cites nothing): a model's claim, not shown on code. */
  verified: boolean;
}

/** The record of one critique (runs/<id>/critique/itN.json, the audit tape, the report). */
export interface CritiqueRecord {
  version: 1;
  iteration: number;
  node: string;
  mode: CritiqueMode;
  /** The domain packs whose critique context went into the prompt (skill names). */
  packs: string[];
  trace: Trace;
  /** Per trace entry (`item:<id>` or `quantity:<name>`), its citations as checked. */
  traceChecks: Record<string, CitationCheck[]>;
  findings: CheckedFinding[];
  /** What the critique did to the verdict: nothing, sent back (block), waited for a person (approve). */
  effect: "none" | "sent_back" | "approved" | "denied";
  /** Set when the tracer or the critique gave no valid reply: the critique is missing, not clean. */
  failed?: string;
}

export const CRITIQUE_MODES = ["off", "report", "approve", "block"] as const;
export type CritiqueMode = (typeof CRITIQUE_MODES)[number];

/** The trace entry key of an item or a quantity (how findings point at them). */
export function traceKey(kind: "item" | "quantity", name: string): string {
  return `${kind}:${name}`;
}
