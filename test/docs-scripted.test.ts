// docs/scripted.md is generated from the schemas the code validates with, and the README's script
// fits them: the doc cannot drift from the code, and the README's example is not a shape no role has.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { FinalSuggestions } from "../runner/agents/final-review.ts";
import { PrescanPlan } from "../runner/agents/prescan.ts";
import { ReviewVerdict } from "../runner/agents/review.ts";
import { parseScript } from "../runner/llm/scripted/script.ts";
import { workTools } from "../runner/tools/registry.ts";
import { DOC, renderScriptedDoc } from "../scripts/scripted-doc.ts";
import { readmeScript } from "./helpers/readme.ts";

describe("docs/scripted.md", () => {
  it("is what scripts/scripted-doc.ts renders from the schemas (regenerate it when this fails)", () => {
    expect(readFileSync(DOC, "utf8")).toBe(renderScriptedDoc());
  });

  it("the README's script loads, and each structured reply and tool input fits its schema", () => {
    const script = parseScript(readmeScript(), "demo.yaml");
    const schemas = { prescan: PrescanPlan, review: ReviewVerdict, final_review: FinalSuggestions };
    for (const [role, schema] of Object.entries(schemas)) {
      const replies = script.queues.get(role) ?? [];
      expect(replies.length, role).toBeGreaterThan(0);
      for (const { reply, line } of replies.filter((r) => r.reply.json !== undefined))
        expect(schema.safeParse(reply.json).error?.issues ?? [], `demo.yaml:${line}`).toEqual([]);
    }
    for (const { reply, line } of script.queues.get("work") ?? []) {
      for (const call of reply.tool_calls ?? []) {
        const tool = workTools.get(call.name);
        expect(tool, `demo.yaml:${line}: ${call.name}`).toBeDefined();
        const schema = tool?.spec.inputSchema as { required?: string[]; properties?: object };
        for (const field of schema.required ?? [])
          expect(call.input, `demo.yaml:${line}`).toHaveProperty(field);
        for (const field of Object.keys(call.input))
          expect(Object.keys(schema.properties ?? {}), `demo.yaml:${line}`).toContain(field);
      }
    }
  });
});
