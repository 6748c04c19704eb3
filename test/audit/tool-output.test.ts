// `scifi audit show RUN --call ID` finds an elided output's full text by the call id its placeholder
// names (never a record number), both where a request carried it and where the runner recorded it
// on its own (a `tool_output` event) before eliding it unsent; that event is redacted like a call.
// A work pass over the scripted model (labelled scripted; real HTTP) and the real CLI.
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import { findToolOutput } from "../../runner/audit/tool-output.ts";
import { readTape, verifyTape } from "../../runner/audit/verify.ts";
import { closeAll, DONE, emits, scriptedPass } from "../attack/a41c-pass.ts";

afterEach(closeAll);

const bin = join(import.meta.dirname, "..", "..", "bin", "scifi.js");
const exec = promisify(execFile);
const SECRET = "sk-live0123456789abcdefXYZ";

it("audit show --call prints an elided output's record, sent or recorded unsent, and redacts the secret in it (scripted)", async () => {
  // Ten parallel outputs at the quarter-budget cap: some are elided before any request carries them.
  const parallel = Array.from(
    { length: 10 },
    (_, i) => `{ name: emit, input: { chars: 9000, tag: "p-${i} ${SECRET}" } }`,
  );
  const run = await scriptedPass("scripted", [
    "context_window: 16000",
    "work:",
    ...emits(2, 3000),
    `  - tool_calls: [${parallel.join(", ")}]`,
    ...emits(8, 3000, (i) => `after-${i}`),
    DONE,
  ]);
  await closeAll();
  expect(run.result?.exit.type).toBe("done");
  // Every placeholder any request sent (the parallel step is later removed whole).
  const placeholders = run.tape
    .flatMap((c) => c.request.messages.flatMap((m) => m.content))
    .filter((b) => b.type === "tool_result" && b.content.startsWith("[scifi elided"));
  const unsent = placeholders.find(
    (b) => b.type === "tool_result" && b.content.includes("tool_output record"),
  );
  const sent = placeholders.find((b) => b.type === "tool_result" && b.content.includes("first sent it"));
  if (unsent?.type !== "tool_result" || sent?.type !== "tool_result")
    throw new Error("the pass elided no output unsent, or none sent: the scenario no longer tests both");

  // Recorded unsent: a tool_output event, before the request that carried its placeholder.
  expect(verifyTape(run.tapePath)).toMatchObject({ ok: true });
  const records = readTape(run.tapePath);
  const event = findToolOutput(records, unsent.toolUseId);
  expect(event).toMatchObject({ where: "tool_output", role: "work" });
  expect(event?.text).toMatch(/^p-\d \[REDACTED[^\]]*\]: z{100}/);
  const carrier = records.find(
    (r) => r.kind === "call" && JSON.stringify(r.request.messages).includes(unsent.toolUseId),
  );
  expect(event?.seq).toBeLessThan(carrier?.seq ?? -1);
  // Redacted like a call: the secret is nowhere on the tape.
  expect(readFileSync(run.tapePath, "utf8")).not.toContain(SECRET);

  const shown = await exec(process.execPath, [bin, "audit", "show", run.dir, "--call", unsent.toolUseId]);
  expect(shown.stdout).toContain(
    `#${event?.seq} tool_output event (work, step 3): output of tool call ${unsent.toolUseId}`,
  );
  // The body's rows are marked (`  | `, `  |+ ` where a line folds): unmarked and joined, the text.
  const body = shown.stdout
    .split("\n")
    .slice(1)
    .filter((l) => l.startsWith("  |"))
    .map((l, i) => (l.startsWith("  |+ ") ? l.slice(5) : `${i === 0 ? "" : "\n"}${l.slice(4)}`))
    .join("");
  expect(body).toBe(event?.text);
  const fromRequest = await exec(process.execPath, [
    bin,
    "audit",
    "show",
    run.dir,
    "--call",
    sent.toolUseId,
    "--json",
  ]);
  expect(JSON.parse(fromRequest.stdout)).toMatchObject({ where: "request", callId: sent.toolUseId });

  // The transcript shows the event as a preview, saying where the whole text is.
  const transcript = await exec(process.execPath, [bin, "audit", "show", run.dir]);
  expect(transcript.stdout).toContain(`event tool_output work ${unsent.toolUseId}: p-`);
  expect(transcript.stdout).toContain(`the whole text: scifi audit show RUN --call ${unsent.toolUseId}`);

  const missing = await exec(process.execPath, [bin, "audit", "show", run.dir, "--call", "no-such-id"]).catch(
    (e: { code: number; stderr: string }) => e,
  );
  expect(missing).toMatchObject({ code: 1 });
  expect((missing as { stderr: string }).stderr).toContain("no record of");
});
