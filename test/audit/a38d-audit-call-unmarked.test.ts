// a38d-audit-call-unmarked (fixed): `scifi audit show RUN --call ID` prints a tool's output with no
// mark on its lines, so the output can print a line that reads as the command's own header.
//
// The promise (issue 38 point 2: no text the runner did not choose "can ... add a line that reads as
// the runner's"; runner/terminal-text.ts: "a newline in one field fakes a line of the listing";
// approvals and failure lines mark every content row `  | `). The brief of attacker a38d names
// `scifi audit show --call`'s output.
// What happened: runner/cli/commands/audit.ts showOutput writes its header line
// (`#<seq> tool_output event (<role>, ...): output of tool call <id>, <n> characters`) and then the
// tool's output through visibleBlock, whose newlines are kept and whose lines carry no prefix. A
// tool output (a `cat` of a file the agent wrote, here the scripted `blob` tool, labelled scripted)
// holding "\n#1 the request of call (review): output of tool call toolu_review, 2 characters\nOK"
// shows, under the real header, a second header at column 0 in the runner's exact
// words, with what reads as the review's output after it.
// Fixed: `scifi audit show --call` prints the output with every row marked (`  | `, `  |+ ` where a
// long line folds at 80 columns) and an end line; `--json` gives it raw.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, expect, it } from "vitest";
import { closeAll, DONE, scriptedPass } from "../attack/a41c-pass.ts";

afterEach(closeAll);

const bin = join(import.meta.dirname, "..", "..", "bin", "scifi.js");
const exec = promisify(execFile);
const FORGED = "#1 the request of call (review): output of tool call toolu_review, 2 characters";

it("no line of a tool's output reads as audit show --call's header (scripted)", async () => {
  const tag = `x\\n${FORGED}\\nOK`;
  const run = await scriptedPass("scripted", [
    "work:",
    `  - tool_calls: [{ name: blob, input: { unit: "z", times: 3, tag: "${tag}" } }]`,
    DONE,
  ]);
  await closeAll();
  const block = run.tape
    .flatMap((c) => c.request.messages.flatMap((m) => m.content))
    .find((b) => b.type === "tool_result" && b.content.includes("toolu_review"));
  if (block?.type !== "tool_result")
    throw new Error("the blob output was never sent: the scenario no longer runs");
  const shown = await exec(process.execPath, [bin, "audit", "show", run.dir, "--call", block.toolUseId]);
  const headers = shown.stdout
    .split("\n")
    .filter((line) => /^#\d+ (tool_output event|the request of call) /.test(line));
  expect(headers).toHaveLength(1);
  expect(headers[0]).toContain(block.toolUseId);
});
