// No API key planted in the environment (or in a key file, or named secret in the config) appears
// anywhere in a run's files, even when the model echoes it and a tool result contains it.
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { Redactor } from "../../runner/audit/redact.ts";
import { AuditTape } from "../../runner/audit/tape.ts";
import { verifyTape } from "../../runner/audit/verify.ts";
import { createModel } from "../../runner/llm/create-model.ts";
import { ScriptedServer } from "../../runner/llm/scripted/server.ts";

const ENV_KEY = "sk-ant-api03-PLANTEDenvKEY0123456789abcdefXYZ";
const FILE_KEY = "PLANTED-file-key-7f3c9a1b2d4e";
const LAB_SECRET = "lab-db-pw-Zq8!mK2#";
const BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.PLANTEDbearer.sig";

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

let closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const c of closers) await c.close();
  closers = [];
});

describe("secret redaction", () => {
  it("keeps planted keys out of every file of the run", async () => {
    const work = mkdtempSync(join(tmpdir(), "scifi-secrets-"));
    const keyFile = join(work, "openai.key");
    writeFileSync(keyFile, `${FILE_KEY}\n`);
    const script = join(work, "script.yaml");
    // The scripted model "leaks" every secret in its reply, as a confused model might.
    writeFileSync(
      script,
      `work:\n  - text: "env ${ENV_KEY} file ${FILE_KEY} lab ${LAB_SECRET} auth ${BEARER}"\n  - text: "again ${ENV_KEY}"\n`,
    );
    const server = await ScriptedServer.start(script);
    closers.push(server);
    const env = { ...process.env, SCIFI_TEST_ANTHROPIC_KEY: ENV_KEY, LAB_DB: LAB_SECRET };
    const runDir = join(work, "runs", "r1");
    const tape = new AuditTape(join(runDir, "audit.jsonl"), { runId: "r1", redactor: new Redactor({ env }) });
    const prices = { input: 1, output: 1 };
    const model = await createModel(
      {
        models: [
          {
            name: "a",
            provider: "anthropic",
            model: "scripted-a",
            baseURL: server.baseURL,
            rank: 1,
            prices,
            apiKeyEnv: "SCIFI_TEST_ANTHROPIC_KEY",
          },
          {
            name: "o",
            provider: "openai",
            model: "scripted-o",
            baseURL: `${server.baseURL}/v1`,
            rank: 1,
            prices,
            apiKeyEnv: "UNSET_VAR_X",
            apiKeyFile: keyFile,
          },
        ],
        secretEnv: ["LAB_DB"],
      },
      tape,
      { env },
    );
    closers.push(model);
    for (let i = 0; i < 2; i++) {
      await model.complete({
        role: "work",
        kind: "work",
        rank: 1,
        system: `Never print ${ENV_KEY}.`,
        messages: [
          {
            role: "user",
            content: [{ type: "text", text: `cat .env -> KEY=${FILE_KEY} DB=${LAB_SECRET} ${BEARER}` }],
          },
        ],
        meta: { runId: "r1" },
      });
    }
    tape.close();

    const files = filesUnder(runDir);
    expect(files).toHaveLength(1);
    const text = files.map((f) => readFileSync(f, "utf8")).join("\n");
    for (const secret of [ENV_KEY, FILE_KEY, LAB_SECRET, "PLANTEDbearer", "PLANTEDenvKEY"]) {
      expect(text).not.toContain(secret);
    }
    expect(text).toContain("[REDACTED]");
    expect(text.match(/\[REDACTED\]/g)?.length).toBeGreaterThanOrEqual(10);
    expect(verifyTape(join(runDir, "audit.jsonl")).ok).toBe(true);

    // And the CLI's views of the run show none of them either.
    const bin = join(import.meta.dirname, "..", "..", "bin", "scifi.js");
    const shown = await promisify(execFile)(process.execPath, [bin, "audit", "show", runDir]);
    expect(shown.stdout).toContain("[REDACTED]");
    expect(shown.stdout).not.toContain(ENV_KEY);
  });

  it("redacts common key shapes even without knowing the value", () => {
    const r = new Redactor({ env: {} });
    expect(r.text("key sk-proj-abcdefghijklmnopqrstuv and Authorization: Bearer abc.def.ghi123")).toBe(
      "key [REDACTED] and Authorization: [REDACTED]",
    );
    expect(r.value({ nested: [{ token: "ghp_0123456789abcdefghijABCD" }] })).toEqual({
      nested: [{ token: "[REDACTED]" }],
    });
  });
});
