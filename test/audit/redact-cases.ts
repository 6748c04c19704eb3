// The redaction cases shared by the tape's tests (redact.test.ts) and the export's (it redacts
// again with the same Redactor: test/export/guard.test.ts): every key shape, every position, and
// ordinary text that must pass unchanged.
import { Redactor } from "../../runner/audit/redact.ts";

/** Every key shape of redact.ts's pattern list, and known values; each holds the word PLANTED. */
export const KEYS: Record<string, string> = {
  anthropic: "sk-ant-api03-PLANTEDanthropic0123456789abcdef",
  openai: "sk-proj-PLANTEDopenai0123456789abcdef",
  "slack xoxa": "xoxa-PLANTEDslack0123456789ab",
  "slack xoxb": "xoxb-PLANTEDslack0123456789ab",
  "slack xoxp": "xoxp-PLANTEDslack0123456789ab",
  "slack xoxr": "xoxr-PLANTEDslack0123456789ab",
  "github ghp": "ghp_PLANTEDgithub0123456789abcdef",
  "github gho": "gho_PLANTEDgithub0123456789abcdef",
  "github pat": "github_pat_PLANTEDgithub0123456789abcdef",
  gitlab: "glpat-PLANTEDgitlab0123456789ab",
  aws: "AKIAPLANTEDAWS012345",
  bearer: "Bearer PLANTEDbearer.token.sig",
  "bearer after a tab": "Bearer\tPLANTEDbearer.token.sig",
  "known value": "PLANTED-known-value-7f3c9a",
  'known value with " and \\': 'lab"pw\\PLANTED-Zq8',
  "env var named secret": "PLANTED-env-secret-42",
};

export const redactor = () =>
  new Redactor({
    env: { LAB_DB: KEYS["env var named secret"] },
    secretEnvNames: ["LAB_DB"],
    values: [KEYS["known value"] ?? "", KEYS['known value with " and \\'] ?? ""],
  });

/** Decoded strings holding the key `k` in every position and next to every kind of escape. */
export function contexts(k: string): Record<string, string> {
  return {
    alone: k,
    "line start": `${k}\nnext line`,
    "line start after a line": `first line\n${k}\nnext line`,
    "mid-line": `export KEY=x; echo ${k} done`,
    "line end": `the key is ${k}\nnext`,
    "text end": `first line\n${k}`,
    "\\r\\n": `a\r\n${k}\r\nb`,
    "\\t": `col\t${k}\tcol`,
    "\\u000b (written as \\u escape)": `a\u000b${k}\u000bb`,
    "\\u2028": `a\u2028${k}`,
    "literal \\n (code in a string)": `print("a\\n${k}")`,
    "literal \\r\\n": `a\\r\\n${k}`,
    "literal \\t": `a\\t${k}`,
    "literal \\u000a": `a\\u000a${k}`,
    "nested JSON": JSON.stringify({ env: `X=1\n${k}\n`, list: [k] }),
    "JSON in JSON": JSON.stringify(JSON.stringify({ env: `${k}\r\n` })),
  };
}

/** Ordinary text near the key shapes, which must pass unchanged. */
export const ORDINARY = [
  "task-runner-for-the-whole-lab-abc",
  "first line\ntask-runner-for-the-whole-lab-abc",
  "risk-assessment-of-the-whole-project",
  "a\\ntask-runner-for-the-whole-lab-abc",
  "the Bearer of bad news",
  "ghp and gho are prefixes; AKIA too",
  "C:\\new\\skills\\file.txt",
  "café\nmaskless-frobnication-routine",
  'JSON {"a":"b\\n","c":[1,2]} \u2028 ünïcödé \u0001',
];

/** The surroundings of every planted key left in `text` (short, so a failure names the case). */
export function leaks(text: string): string[] {
  return [...text.matchAll(/PLANTED/g)].map((m) => text.slice(Math.max(0, m.index - 40), m.index + 20));
}

export const cases = Object.entries(KEYS).flatMap(([shape, key]) =>
  Object.entries(contexts(key)).map(([where, text]) => ({ shape, where, text })),
);
