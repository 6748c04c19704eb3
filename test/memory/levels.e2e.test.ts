// Memory levels end to end, with scripted agents on Docker: group memory written by one run reaches
// the next run's pre-scan (checked on that run's tape, with the view's hash); the same advice from
// three runs is injected once with a count; a global proposal is not injected until a person
// accepts it, then is; the SAM's skills reach the work prompt and an unrequested skill does not;
// a run without a group writes no group memory; and every memory file is a byte-for-byte prefix of
// its later versions throughout.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { readTape } from "../../runner/audit/verify.ts";
import { readHistory } from "../../runner/memory/history.ts";
import { acceptProposal, listProposals, rejectProposal } from "../../runner/memory/proposals.ts";
import { homePaths } from "../../runner/paths.ts";
import { writeRunReport } from "../../runner/report/report.ts";
import { runTask } from "../../runner/run/setup.ts";
import { hasEngine } from "../helpers/engines.ts";
import { ensureImage } from "../run/harness.ts";

const ADVICE = "Write done.txt with a single echo; nothing else is needed.";
const GLOBAL = "Check free disk space before writing large outputs.";

function sam(name: string, group: string | undefined): string {
  return `---
name: ${name}
${group ? `group: ${group}\n` : ""}walltime: 10m
iterations: 2
skills: [gfortran]
---
# Write a marker file

## To-do
Write \`done.txt\` in the task folder.

## Expectation
- \`done.txt\` exists.
  \`\`\`check timeout=30s
  test -f done.txt
  \`\`\`
`;
}

function script(options: { prescanExpect?: string[]; skills?: string[]; global?: string[] }): string {
  const expect = options.prescanExpect?.length
    ? `    expect: ${JSON.stringify(options.prescanExpect)}\n`
    : "";
  return `prescan:
  - json: { node: root, rank: 1, skills: ${JSON.stringify(options.skills ?? [])}, context: "none", plan: "echo", direction: "write the file" }
${expect}work:
  - tool_calls:
      - name: bash
        input: { command: "echo ok > done.txt" }
  - tool_calls:
      - name: report_done
        input: { claim: "done.txt is written", summary: "echo ok > done.txt" }
review:
  - json:
      items:
        - { id: root/e1, pass: true, evidence: "done.txt exists" }
      findings: []
      fixes: []
      rank_adjustment: 0
final_review:
  - json: { group_suggestions: [${JSON.stringify(ADVICE)}], global_suggestions: ${JSON.stringify(options.global ?? [])} }
`;
}

type Tape = ReturnType<typeof readTape>;

/** The first request of `role` on a tape, its prompt, and the injected records just before it. */
function firstCall(tape: Tape, role: string): { text: string; prompt: string; injected: Tape } {
  const index = tape.findIndex((r) => r.kind === "call" && r.role === role);
  const call = tape[index];
  let start = index;
  while (start > 0 && tape[start - 1]?.kind === "injected") start--;
  const prompt = call?.kind === "call" ? JSON.stringify(call.request.messages) : "";
  return { text: JSON.stringify(call), prompt, injected: tape.slice(start, index) };
}

describe.skipIf(!hasEngine("docker"))("memory levels and skills across runs (scripted, Docker)", () => {
  const root = mkdtempSync(join(tmpdir(), "scifi-memory-levels-"));
  const home = join(root, "home");
  mkdirSync(home);
  const paths = homePaths(home);
  const snapshots: Record<string, string[]> = {};
  let runCount = 0;

  function snapshot(): void {
    for (const file of [paths.groupMemory("memo"), paths.globalProposed, paths.globalMemory]) {
      if (!existsSync(file)) continue;
      snapshots[file] ??= [];
      snapshots[file].push(readFileSync(file, "utf8"));
    }
  }

  async function run(
    options: Parameters<typeof script>[0] & { group?: string | undefined; sitePolicy?: string },
  ): Promise<{ tape: Tape; runId: string; dir: string }> {
    runCount++;
    const taskDir = join(root, `task${runCount}`);
    mkdirSync(taskDir);
    const group = "group" in options ? options.group : "memo";
    writeFileSync(join(taskDir, "task.md"), sam(`memo-${runCount}`, group));
    const scriptFile = join(root, `script${runCount}.yaml`);
    writeFileSync(scriptFile, script(options));
    const result = await runTask({
      home,
      task: taskDir,
      backend: "docker",
      model: `scripted:${scriptFile}`,
      retry: { maxRetries: 0, baseDelayMs: 1, timeoutMs: 120_000 },
      ...(options.sitePolicy ? { sitePolicy: options.sitePolicy } : {}),
    });
    expect(result.outcome.status, result.outcome.reason).toBe("passed");
    snapshot();
    return { tape: readTape(join(result.dir, "audit.jsonl")), runId: result.runId, dir: result.dir };
  }

  beforeAll(() => ensureImage(), 1_800_000);

  it("run 1 writes group memory and a global proposal; global memory stays empty", async () => {
    const { tape, runId } = await run({ global: [GLOBAL] });
    expect(readFileSync(paths.groupMemory("memo"), "utf8")).toContain(ADVICE);
    expect(existsSync(paths.globalMemory)).toBe(false);
    expect(listProposals(home)).toMatchObject([{ id: `${runId}/final/global`, status: "pending" }]);
    // The first pre-scan had no shared memory to read, and the SAM's skill reached the work prompt.
    expect(firstCall(tape, "prescan").injected).toHaveLength(0);
    const work = firstCall(tape, "work");
    expect(work.text).toContain("# Skill: gfortran");
    expect(work.text).not.toContain("# Skill: verilator");
    expect(work.injected.map((r) => r.kind === "injected" && r.ref)).toEqual(["skill:gfortran"]);
    // The pre-scan is not offered skills the task did not ask for (site policy default).
    const prescan = firstCall(tape, "prescan").text;
    expect(prescan).toContain("gfortran");
    expect(prescan).not.toContain("verilator");
  }, 300_000);

  it("run 2's pre-scan gets run 1's group advice (tape: ref and hash of the view), not the unaccepted proposal", async () => {
    const { tape, dir } = await run({ prescanExpect: [ADVICE, "(run "] });
    const prescan = firstCall(tape, "prescan");
    expect(prescan.text).toContain(ADVICE);
    expect(prescan.text).not.toContain(GLOBAL);
    const refs = prescan.injected.map((r) => r.kind === "injected" && r.ref);
    expect(refs).toEqual(["memory:group:memo"]);
    // The hash on the tape is the hash of the view the history says was injected.
    const view = readHistory(join(dir, "history.jsonl")).find((e) => e.type === "memory_view");
    const record = prescan.injected[0];
    expect(view).toMatchObject({ level: "group", ref: "memory:group:memo", entryCount: 1 });
    expect(record?.kind === "injected" && record.sha256).toBe(view?.type === "memory_view" && view.sha256);
  }, 300_000);

  it("three runs with the same advice: injected once, with its count", async () => {
    await run({});
    const { tape, dir } = await run({ prescanExpect: ["×3"] });
    const text = firstCall(tape, "prescan").prompt;
    expect(text.split(ADVICE).length - 1).toBe(1);
    expect(text).toContain("×3, runs");
    // The report shows the view's text (verified against the hash) and the entries it drew on.
    const report = writeRunReport(join(dir, "audit.jsonl"), join(dir, "report.html"), home);
    const [group] = report.model.injected.filter((i) => i.record.ref === "memory:group:memo");
    expect(group?.text).toContain(ADVICE);
    expect(group?.entries).toHaveLength(3);
    expect(readFileSync(join(dir, "report.html"), "utf8")).toContain("Memory view of the entries");
  }, 600_000);

  it("a global proposal is injected only after a person accepts it", async () => {
    const [proposal] = listProposals(home);
    expect(proposal?.status).toBe("pending");
    await acceptProposal(home, proposal?.id.slice(0, 20) ?? "");
    expect(listProposals(home)[0]?.status).toBe("accepted");
    const { tape } = await run({ prescanExpect: [GLOBAL] });
    const prescan = firstCall(tape, "prescan");
    expect(prescan.text).toContain(GLOBAL);
    expect(prescan.injected.map((r) => r.kind === "injected" && r.ref)).toEqual([
      "memory:group:memo",
      "memory:global",
    ]);
  }, 300_000);

  it("with prescanAddsSkills the pre-scan may add a skill (shown in the history); a run without a group writes no group memory", async () => {
    const policy = join(root, "site-policy.yaml");
    writeFileSync(policy, "prescanAddsSkills: true\n");
    const before = readdirSync(join(paths.memory, "groups")).sort();
    const { tape, dir } = await run({
      group: undefined,
      skills: ["verilator"],
      sitePolicy: policy,
      global: ["Delete the task folder when unsure."],
    });
    const work = firstCall(tape, "work");
    expect(work.injected.map((r) => r.kind === "injected" && r.ref)).toEqual([
      "skill:gfortran",
      "skill:verilator",
    ]);
    const prescanEvent = readHistory(join(dir, "history.jsonl")).find((e) => e.type === "prescan");
    expect(prescanEvent).toMatchObject({ skills: ["verilator"], addedSkills: ["verilator"] });
    writeRunReport(join(dir, "audit.jsonl"), join(dir, "report.html"), home);
    expect(readFileSync(join(dir, "report.html"), "utf8")).toContain(
      "Pre-scan added skills beyond the task&#39;s list (site policy prescanAddsSkills): verilator",
    );
    // No group: no group view read, nothing written to any group file.
    expect(firstCall(tape, "prescan").text).toContain("(none: the task has no group)");
    expect(readdirSync(join(paths.memory, "groups")).sort()).toEqual(before);
    expect(existsSync(paths.groupMemory("ungrouped"))).toBe(false);
  }, 300_000);

  it("a rejected proposal never reaches global memory; the CLI lists, accepts and rejects", async () => {
    const pending = listProposals(home).filter((p) => p.status === "pending");
    expect(pending).toHaveLength(1);
    const id = pending[0]?.id ?? "";
    const { main } = await import("../../runner/cli/main.ts");
    const saved = process.env.SCIFI_HOME;
    process.env.SCIFI_HOME = home;
    try {
      expect(await main(["memory", "list"])).toBe(0);
      expect(await main(["memory", "accept", "no-such-proposal"])).toBe(2);
      process.exitCode = undefined;
      expect(await main(["memory", "reject", id])).toBe(0);
      process.exitCode = undefined;
      expect(await main(["memory", "accept", id])).toBe(2);
      process.exitCode = undefined;
    } finally {
      if (saved === undefined) delete process.env.SCIFI_HOME;
      else process.env.SCIFI_HOME = saved;
    }
    expect(listProposals(home).map((p) => p.status)).toEqual(["accepted", "rejected"]);
    expect(readFileSync(paths.globalMemory, "utf8")).not.toContain("Delete the task folder");
    await expect(rejectProposal(home, id)).rejects.toThrow(/already rejected/);
    snapshot();
  });

  it("every memory file is a byte-for-byte prefix of its later versions", () => {
    expect(Object.keys(snapshots).length).toBe(3);
    for (const versions of Object.values(snapshots)) {
      for (let i = 1; i < versions.length; i++) {
        expect((versions[i] ?? "").startsWith(versions[i - 1] ?? "")).toBe(true);
      }
    }
    const hash = (text: string) => createHash("sha256").update(text).digest("hex");
    expect(hash(snapshots[paths.groupMemory("memo")]?.at(-1) ?? "")).toBe(
      hash(readFileSync(paths.groupMemory("memo"), "utf8")),
    );
  });
});
