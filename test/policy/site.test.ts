// Site policy: file discovery (flag, env, default), defaults when absent, validation messages.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { PolicyRefused } from "../../runner/policy/refused.ts";
import {
  BUILTIN_SITE_POLICY,
  loadSitePolicy,
  parseSitePolicy,
  sitePolicyPath,
} from "../../runner/policy/site.ts";

const GiB = 1024 ** 3;

describe("site policy", () => {
  it("is found by flag, then env SCIFI_SITE_POLICY, then <home>/site-policy.yaml", () => {
    expect(sitePolicyPath("/h", "/flag.yaml", { SCIFI_SITE_POLICY: "/env.yaml" })).toBe("/flag.yaml");
    expect(sitePolicyPath("/h", undefined, { SCIFI_SITE_POLICY: "/env.yaml" })).toBe("/env.yaml");
    expect(sitePolicyPath("/h", undefined, {})).toBe("/h/site-policy.yaml");
  });

  it("falls back to the built-in defaults when the default file is absent", () => {
    const loaded = loadSitePolicy("/nonexistent/site-policy.yaml", false);
    expect(loaded).toEqual({ policy: BUILTIN_SITE_POLICY, source: undefined });
    expect(BUILTIN_SITE_POLICY).toMatchObject({
      allowedMountRoots: [],
      allowReadWriteMounts: false,
      maxGpus: 0,
    });
  });

  it("refuses an explicitly named file that does not exist", () => {
    expect(() => loadSitePolicy("/nonexistent/p.yaml", true)).toThrow(
      "policy refused [site-policy-invalid] /nonexistent/p.yaml: the site policy file does not exist. Check the path given with --site-policy or SCIFI_SITE_POLICY.",
    );
  });

  it("reads units and keeps built-in values for keys it does not set", () => {
    const p = parseSitePolicy(
      "allowedMountRoots: [/data]\nmaxMemory: 64GiB\nmaxWalltime: 2d\ndefaultMemory: 2G\nmaxGpus: 2\n",
      "s.yaml",
    );
    expect(p).toEqual({
      ...BUILTIN_SITE_POLICY,
      allowedMountRoots: ["/data"],
      maxMemoryBytes: 64 * GiB,
      maxWalltimeSec: 2 * 86400,
      defaultMemoryBytes: 2 * GiB,
      maxGpus: 2,
    });
  });

  it("names the file, the key and the expected form on bad input", () => {
    const bad = (text: string) => {
      try {
        parseSitePolicy(text, "/etc/scifi/site.yaml");
      } catch (error) {
        expect(error).toBeInstanceOf(PolicyRefused);
        return (error as PolicyRefused).message;
      }
      throw new Error("expected a refusal");
    };
    const tail = "Fix the file (keys and forms are listed in docs/sandbox.md and site-policy.example.yaml).";
    expect(bad("allowNetwork: yes-please\n")).toBe(
      `policy refused [site-policy-invalid] /etc/scifi/site.yaml: allowNetwork: Invalid input: expected boolean, received string. ${tail}`,
    );
    expect(bad("maxMemory: lots\n")).toBe(
      `policy refused [site-policy-invalid] /etc/scifi/site.yaml: maxMemory: 'lots' is not a size like 4GiB or 512M. ${tail}`,
    );
    expect(bad("allowedMountRoots: [data]\n")).toBe(
      `policy refused [site-policy-invalid] /etc/scifi/site.yaml: allowedMountRoots.0: must be an absolute path. ${tail}`,
    );
    expect(bad("allowNetwrok: true\n")).toBe(
      `policy refused [site-policy-invalid] /etc/scifi/site.yaml: (top level): Unrecognized key: "allowNetwrok". ${tail}`,
    );
    expect(bad("a: [\n")).toMatch(
      /^policy refused \[site-policy-invalid\] \/etc\/scifi\/site.yaml: it is not valid YAML \(/,
    );
  });

  it("sandboxUser and maxTaskFolder: defaults 65534:65534 and 4 GiB, never uid 0", () => {
    expect(BUILTIN_SITE_POLICY.sandboxUser).toEqual({ uid: 65534, gid: 65534 });
    expect(BUILTIN_SITE_POLICY.maxTaskFolderBytes).toBe(4 * GiB);
    const p = parseSitePolicy('sandboxUser: "10001:10001"\nmaxTaskFolder: 512M\n', "/s.yaml");
    expect(p.sandboxUser).toEqual({ uid: 10001, gid: 10001 });
    expect(p.maxTaskFolderBytes).toBe(512 * 1024 ** 2);
    for (const bad of ['"0:0"', '"0:100"', '"100:0"', "nobody", '"1:2:3"'])
      expect(() => parseSitePolicy(`sandboxUser: ${bad}\n`, "/s.yaml"), bad).toThrow(
        /sandboxUser: .*uid:gid/,
      );
  });

  it("the example file in the repository is valid", () => {
    const dir = mkdtempSync(join(tmpdir(), "scifi-site-"));
    writeFileSync(join(dir, "x.yaml"), "{}\n");
    expect(loadSitePolicy(join(dir, "x.yaml"), true).policy).toEqual(BUILTIN_SITE_POLICY);
    const example = loadSitePolicy(join(import.meta.dirname, "..", "..", "site-policy.example.yaml"), true);
    expect(example.policy.allowedMountRoots.length).toBeGreaterThan(0);
  });
});
