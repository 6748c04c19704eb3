// The oracle's output: at most three ambiguous phrases, each with both readings. The model's reply
// is checked against this schema and against the SAM itself (the phrase must be in it).
import { z } from "zod";

export const CATEGORIES = ["collection_scope", "multi_part_object", "output_timing", "generic"] as const;
export type Category = (typeof CATEGORIES)[number];

export const MAX_FINDINGS = 3;

const reading = z
  .object({
    reading: z.string().trim().min(1).describe("what the phrase means under this reading"),
    rewrite: z.string().trim().min(1).describe("the phrase rewritten so only this reading is possible"),
  })
  .strict();

const finding = z
  .object({
    phrase: z
      .string()
      .trim()
      .min(1)
      .describe("the ambiguous phrase, copied exactly from the To-do or Expectation"),
    category: z
      .enum(CATEGORIES)
      .describe("templated mode: one of the fixed categories; free mode: generic or the closest"),
    why: z.string().trim().min(1).describe("why the phrase changes what gets built or how it is judged"),
    question: z.string().trim().min(1).describe("the clarifying question to ask the user"),
    golden: reading.describe("the recommended or conventional reading"),
    silver: reading.describe("the alternative, equally plausible reading"),
  })
  .strict();

export const oracleReply = z
  .object({
    findings: z
      .array(finding)
      .max(MAX_FINDINGS, `at most ${MAX_FINDINGS} findings; keep the highest-risk ones`),
  })
  .strict();

export type OracleReply = z.infer<typeof oracleReply>;
export type OracleFindingReply = z.infer<typeof finding>;

/** JSON Schema sent with the request (structured output). */
export const ORACLE_JSON_SCHEMA = z.toJSONSchema(oracleReply) as Record<string, unknown>;

/** One finding as reported: the model's fields plus where the phrase is, found by code. */
export interface OracleFinding {
  phrase: string;
  category: Category;
  /** The SAM node (`root`, `root/1` ...) and section holding the phrase, and its line in that file. */
  where: { node: string; section: "todo" | "expectation"; file: string; line: number };
  why: string;
  question: string;
  golden: { reading: string; rewrite: string };
  silver: { reading: string; rewrite: string };
}

export interface OracleReport {
  /** The SAM file as given and its SHA-256: the report is about exactly these bytes. */
  task: string;
  sha256: string;
  mode: "free" | "templated";
  findings: OracleFinding[];
}
