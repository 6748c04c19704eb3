// `network`: a boolean or a host list in the SAM; the site's allowedHosts, deniedHosts and private
// ranges; the proxy rules the spec carries; `scifi plan` showing them.
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { planTask } from "../../runner/cli/plan-task.ts";
import { PolicyRefused } from "../../runner/policy/refused.ts";
import { covers, resolveSpec } from "../../runner/policy/resolve.ts";
import { BUILTIN_SITE_POLICY, parseSitePolicy, type SitePolicy } from "../../runner/policy/site.ts";
import { formatDiagnostic } from "../../runner/sam/diagnostics.ts";
import { type HostRule, parseHostRule } from "../../runner/sam/host-rules.ts";
import { parseSamString } from "../../runner/sam/parse.ts";
import type { SamDocument } from "../../runner/sam/types.ts";

const BODY = "# Task\n\n## To-do\nDo it.\n\n## Expectation\n- Done.\n";

function parse(front: string) {
  return parseSamString(`---\n${front}---\n${BODY}`, "/virtual/task.md");
}

function taskFolder(frontMatter: string): { home: string; dir: string } {
  const home = realpathSync(mkdtempSync(join(tmpdir(), "scifi-net-")));
  const dir = join(home, "tasks", "fit");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "task.md"), `---\n${frontMatter}---\n${BODY}`);
  return { home, dir };
}

function sink() {
  let text = "";
  return { write: (t: string) => (text += t), text: () => text };
}

function resolveIn(front: string, over: Partial<SitePolicy>) {
  const { home, dir } = taskFolder(front);
  const result = parseSamString(`---\n${front}---\n${BODY}`, join(dir, "task.md"));
  if (!result.ok) throw new Error("bad SAM");
  const sam: SamDocument = result.sam;
  return resolveSpec(
    sam,
    { ...BUILTIN_SITE_POLICY, ...over },
    { home, runId: "run-1", user: { uid: 1000, gid: 1000 } },
  );
}

describe("SAM network key", () => {
  it("takes true, false or a list of hosts", () => {
    const list = parse('network: [Data.Example.org, "*.cern.ch:443", data.example.org]\n');
    expect(list.ok).toBe(true);
    expect(list.ok && list.sam.metadata).toMatchObject({
      network: false,
      networkHosts: ["data.example.org", "*.cern.ch:443"],
    });
    const on = parse("network: true\n");
    expect(on.ok && on.sam.metadata.network).toBe(true);
  });

  it("says which item is not a host", () => {
    const r = parse('network: [data.example.org, "http://x.org/", 3]\n');
    expect(r.ok).toBe(false);
    expect(r.diagnostics.map(formatDiagnostic)).toEqual([
      "/virtual/task.md:2:29: error: `network`: the text `http://x.org/` is not a host; write `data.example.org`, `*.example.org` (its subdomains) or `host:port`",
      "/virtual/task.md:2:46: error: `network`: `3` is not a host; write `data.example.org`, `*.example.org` (its subdomains) or `host:port`",
    ]);
  });
});

describe("site policy and resolution", () => {
  it("reads allowedHosts, deniedHosts and allowedPrivateRanges, and refuses bad ones", () => {
    const p = parseSitePolicy(
      "allowedHosts: ['*.example.org', 'pypi.org:443']\ndeniedHosts: [evil.example.org]\nallowedPrivateRanges: [10.1.0.0/16]\n",
      "/s.yaml",
    );
    expect(p).toMatchObject({
      allowedHosts: ["*.example.org", "pypi.org:443"],
      deniedHosts: ["evil.example.org"],
      allowedPrivateRanges: ["10.1.0.0/16"],
    });
    expect(() => parseSitePolicy("allowedPrivateRanges: [lots]\n", "/s.yaml")).toThrow(/address range/);
    expect(() => parseSitePolicy("deniedHosts: ['*']\n", "/s.yaml")).toThrow(/host/);
  });

  it("site rules cover SAM rules by host and port", () => {
    const c = (s: string, m: string) => covers(parseHostRule(s) as HostRule, parseHostRule(m) as HostRule);
    expect(c("*.example.org", "data.example.org")).toBe(true);
    expect(c("*.example.org", "*.a.example.org")).toBe(true);
    expect(c("*.example.org", "example.org")).toBe(false);
    expect(c("data.example.org", "*.example.org")).toBe(false);
    expect(c("data.example.org", "data.example.org:443")).toBe(true);
    expect(c("data.example.org", "data.example.org:22")).toBe(false);
    expect(c("data.example.org:8443", "data.example.org")).toBe(false);
  });

  it("a host list gives proxy rules with the site's denials and ranges; network stays off", () => {
    const spec = resolveIn("network: [data.example.org]\n", {
      allowedHosts: ["*.example.org"],
      deniedHosts: ["bad.example.org"],
      allowedPrivateRanges: ["10.1.0.0/16"],
    });
    expect(spec.network).toBe(false);
    expect(spec.networkRules).toEqual({
      allow: ["data.example.org"],
      deny: ["bad.example.org"],
      allowedPrivateRanges: ["10.1.0.0/16"],
    });
  });

  it("refuses a host the site does not allow, and network: true without allowNetwork", () => {
    try {
      resolveIn("network: [other.org]\n", { allowedHosts: ["*.example.org"] });
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(PolicyRefused);
      expect((e as Error).message).toBe(
        "policy refused [network-host-not-allowed] network: the SAM lists other.org and the site policy's allowedHosts (*.example.org) do not include it. Remove the host from the SAM's `network` list, or ask the site administrator to add it to allowedHosts.",
      );
    }
    expect(() => resolveIn("network: [x.org]\n", { allowedHosts: [] })).toThrow(/network-host-not-allowed/);
    expect(() => resolveIn("network: true\n", { allowNetwork: false })).toThrow(/network-not-allowed/);
    // A host list needs no allowNetwork: it is narrower than unrestricted network.
    expect(resolveIn("network: [x.org]\n", { allowNetwork: false }).networkRules?.allow).toEqual(["x.org"]);
  });

  it("scifi plan shows the rules", () => {
    const { home, dir } = taskFolder("network: [data.example.org, '*.cern.ch:8443']\n");
    writeFileSync(join(home, "site-policy.yaml"), "deniedHosts: [bad.cern.ch]\n");
    const out = sink();
    expect(planTask(dir, { json: false, env: { SCIFI_HOME: home }, out, err: sink() })).toBe("ok");
    expect(out.text()).toContain(
      "  network      only through the run's proxy to data.example.org, *.cern.ch:8443 (no port: 80 and 443); denied by the site: bad.cern.ch; private, loopback and link-local addresses refused",
    );
  });
});
