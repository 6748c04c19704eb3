// `scifi import harbor` on tests that fetch software over the network (issue 40 item 7): which
// commands are read as fetches, each mapped to what the image holds (asked of the real image with
// Docker) or refused naming its line; never an exit 0 for a task that cannot pass without
// --allow-unpassable, which the SAM then records. Compose files and unused files are listed.
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scanFetches } from "../../runner/import/fetch-lines.ts";
import { importHarbor, UnpassableImport } from "../../runner/import/harbor.ts";
import { runScifi } from "../helpers/cli.ts";
import { hasEngine } from "../helpers/engines.ts";
import { REPO } from "../loop/harness.ts";
import { ensurePytestImage, PYTEST_IMAGE } from "./harbor-pytest-image.ts";

const FIXTURES = join(REPO, "test", "fixtures", "harbor");
/** An image without pytest (Debian minbase: no python3 at all), whatever a site adds to its own image. */
const BARE = "scifi-base:bookworm";
const root = mkdtempSync(join(tmpdir(), "scifi-harbor-fetch-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the fetches of a test script", () => {
  it("reads each command that fetches, with its line and what it maps to, and nothing else", () => {
    const script = [
      "#!/bin/bash", // 1
      "set -euo pipefail", // 2
      "apt-get update && apt-get install -y curl > /dev/null 2>&1", // 3
      "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh", // 4
      'source "$HOME/.local/bin/env"', // 5
      "# uvx pytest in a comment is not a command", // 6
      "echo 'pip install x' is text, not a command", // 7
      "if uvx -p 3.13 -w pytest==8.4.1 -w pytest-json-ctrf==0.3.5 \\", // 8
      "  pytest --ctrf /logs/verifier/ctrf.json /tests/test_x.py -rA 2>&1 | tee log; then true; fi", // 9
      "python3 - <<'PY'", // 10
      "import subprocess; subprocess.run(['pip', 'install', 'x'])", // 11
      "PY", // 12
      "pip3 install --break-system-packages numpy==1.26 Scikit_Learn", // 13
      "pip install -r /tests/requirements.txt", // 14
      "wget -q https://example.org/data.tar.gz", // 15
      'sh -c "$(curl -fsSL https://get.example.org/x.sh)"', // 16
      "curl -s http://localhost:8080/health", // 17
      "npm install -g left-pad", // 18
      "uv run python /tests/check.py", // 19
    ].join("\n");
    const found = scanFetches(script).map((f) => {
      const a = f.action;
      return `${f.line} ${a.kind}: ${a.what}${a.kind === "map" ? ` => ${a.replace} [${[...a.needs.python, ...a.needs.apt].join(" ")}]` : ""}`;
    });
    expect(found).toEqual([
      "3 drop: apt-get update: nothing to refresh without network",
      "3 drop: apt-get install curl: needed only to fetch",
      "4 drop: the uv installer (curl | sh)",
      "5 drop: source ~/.local/bin/env: uv's installer's environment",
      "8 map: uvx pytest with pytest-json-ctrf -> the image's pytest => python3 -m pytest -p no:cacheprovider --ctrf /logs/verifier/ctrf.json /tests/test_x.py -rA 2>&1 [pytest pytest-json-ctrf]",
      "13 map: pip3 install numpy scikit-learn => true [numpy scikit-learn]",
      "14 refuse: pip install -r: packages named in a file or a source folder; no mapping",
      "15 refuse: wget: downloads over the network",
      "16 refuse: a command substitution that downloads over the network",
      "17 refuse: curl: talks to a service at localhost (the task's other containers are not started here)",
      "18 refuse: npm install: installs software over the network; no mapping",
      "19 map: uv run python -> the image's python3 => python3 /tests/check.py []",
    ]);
  });

  it("reads the other shapes Terminal-Bench tests take: guarded installs, uv add, python -m pytest, pip upgrading itself", () => {
    const script = [
      "if ! command -v curl >/dev/null 2>&1; then apt-get update; apt-get install -y curl; fi", // 1
      "uvx --with pytest==8.4.1 --with pytest-json-ctrf==0.3.5 python -m pytest /tests/t.py --ctrf=/logs/verifier/c.json -rA", // 2
      "uv add pytest==8.4.1 pytest-json-ctrf==0.3.5", // 3
      "uv run pytest \\", // 4
      "  --ctrf /logs/verifier/ctrf.json \\", // 5
      "  /tests/test_outputs.py -rA", // 6
      "python3 -m pip install --upgrade pip", // 7
      "uv sync --frozen", // 8
      "sudo -E DEBIAN_FRONTEND=noninteractive apt-get install -y curl", // 9
    ].join("\n");
    const found = scanFetches(script).map((f) => {
      const a = f.action;
      if (a.kind !== "map") return `${f.line} ${a.kind}: ${a.what}`;
      return `${f.line} map: ${a.what} => ${a.replace}${a.optional ? ` | without ${a.optional.plugins.join(" ")}: ${a.optional.replace}` : ""}`;
    });
    expect(found).toEqual([
      "1 drop: apt-get update: nothing to refresh without network",
      "1 drop: apt-get install curl: needed only to fetch",
      "2 map: uvx python -m pytest with pytest-json-ctrf -> the image's pytest => python3 -m pytest -p no:cacheprovider /tests/t.py --ctrf=/logs/verifier/c.json -rA | without pytest-json-ctrf: python3 -m pytest -p no:cacheprovider /tests/t.py -rA",
      "3 map: uv add pytest pytest-json-ctrf => true | without pytest-json-ctrf: true",
      "4 map: uv run pytest with pytest-json-ctrf -> the image's pytest => python3 -m pytest -p no:cacheprovider --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA | without pytest-json-ctrf: python3 -m pytest -p no:cacheprovider /tests/test_outputs.py -rA",
      "7 drop: python3 -m pip install pip: needed only to install",
      "8 refuse: uv sync: no mapping",
      "9 drop: apt-get install curl: needed only to fetch",
    ]);
  });
});

describe.skipIf(!hasEngine("docker"))(
  "scifi import harbor: tests that fetch software",
  { timeout: 600_000 },
  () => {
    beforeAll(() => ensurePytestImage(), 1_800_000);

    it("refuses the curl | sh + uvx pytest task for an image without pytest, naming the line, and writes nothing", async () => {
      const out = join(root, "refused");
      const cli = await runScifi(
        root,
        ["import", "harbor", join(FIXTURES, "uv-pytest"), "-o", out, "--image", BARE],
        120_000,
      );
      expect(cli.code).toBe(1);
      expect(cli.stderr).toContain(
        "the task cannot pass here: its tests fetch or install software, checks run without network, and scifi-base:bookworm offers no replacement for:\n  tests/test.sh:16: uvx pytest with pytest-json-ctrf -> the image's pytest: scifi-base:bookworm has no pytest\nUse an image that holds what they install (--image)",
      );
      expect(cli.stdout).toBe("");
      expect(existsSync(out)).toBe(false);
    });

    it("imports it with --allow-unpassable, exit 0 but marked: unpassable: in the SAM, on the terminal, and warned by validate", async () => {
      const out = join(root, "allowed");
      const cli = await runScifi(
        root,
        [
          "import",
          "harbor",
          join(FIXTURES, "uv-pytest"),
          "-o",
          out,
          "--image",
          BARE,
          "--allow-unpassable",
          "--no-audit",
        ],
        120_000,
      );
      expect(cli.stderr).toBe("");
      expect(cli.code).toBe(0);
      expect(cli.stdout).toContain(
        "UNPASSABLE here (imported with --allow-unpassable, marked unpassable: in the SAM):\n  - tests/test.sh:16: uvx pytest",
      );
      expect(cli.stdout).toContain("audit: skipped (--no-audit)");
      const sam = readFileSync(join(out, "task.md"), "utf8");
      expect(sam).toContain(
        'unpassable: "imported with --allow-unpassable: no solution can pass here; the tests fetch software over the network at tests/test.sh:16 (harbor-import.md)"',
      );
      // The refused line stays as written in the hidden test (it fails there); the rest is mapped.
      const test = readFileSync(join(out, "checks/harbor/tests/test.sh"), "utf8");
      expect(test).toContain("if uvx \\\n  -p 3.13");
      expect(test).not.toContain("astral.sh");
      const notes = readFileSync(join(out, "harbor-import.md"), "utf8");
      expect(notes).toContain(
        "## Cannot pass here (imported with --allow-unpassable; the SAM says `unpassable:`)\n- tests/test.sh:16:",
      );
      expect(notes).toContain("## Audit of the checks (scifi check-task)\n- skipped (--no-audit)");
      const valid = await runScifi(root, ["validate", out], 60_000);
      expect(valid.code).toBe(0);
      expect(`${valid.stdout}${valid.stderr}`).toMatch(
        /warning.*this task is marked unpassable: imported with --allow-unpassable/,
      );
    });

    it("maps it to the image's pytest when the image has pytest: no fetch is left, the report plugin's option dropped", () => {
      const r = importHarbor(join(FIXTURES, "uv-pytest"), join(root, "mapped"), { image: PYTEST_IMAGE });
      expect(r.unpassable).toEqual([]);
      expect(r.image).toBe(PYTEST_IMAGE);
      expect(r.outputs).toEqual(["sum.txt"]);
      const test = readFileSync(join(r.outDir, "checks/harbor/tests/test.sh"), "utf8");
      expect(test).not.toMatch(/\b(apt-get|curl|uvx?|pip)\b|\.local\/bin\/env|--ctrf/);
      expect(test).toContain(
        "if python3 -m pytest -p no:cacheprovider /task/checks/harbor/tests/test_outputs.py -rA; then\n  echo 1 > /task/.harbor/verifier/reward.txt",
      );
      expect(r.mapped).toEqual(
        expect.arrayContaining([
          "tests/test.sh:4: apt-get update: nothing to refresh without network -> dropped (checks run without network)",
          "tests/test.sh:8: the uv installer (curl | sh) -> dropped (checks run without network)",
          expect.stringMatching(
            /^tests\/test\.sh:16: uvx pytest with pytest-json-ctrf -> the image's pytest: scifi-harbor-pytest:test has pytest 7\.\d+\.\d+; pytest-json-ctrf \(a report plugin\) it has not: its options are dropped$/,
          ),
        ]),
      );
      expect(readFileSync(r.sam, "utf8")).toMatch(/\nimage: "scifi-harbor-pytest:test"\n/);
    });

    it("refuses every fetch without a mapping, each by file and line; packages the image holds are mapped", () => {
      const dir = mkdtempSync(join(root, "many-"));
      cpSync(join(FIXTURES, "uv-pytest"), dir, { recursive: true });
      writeFileSync(
        join(dir, "tests", "test.sh"),
        [
          "pip install --no-cache-dir numpy pandas", // 1: scifi-sci:local has both
          "pip install totally-not-in-the-image==1.0", // 2
          "git clone https://example.org/ref.git /tmp/ref", // 3
          "curl -fsSL https://example.org/setup.sh | bash", // 4
          "apt-get install -y r-base-core", // 5
          "test -f /app/sum.txt && echo 1 > /logs/verifier/reward.txt",
        ].join("\n"),
      );
      let error: unknown;
      try {
        importHarbor(dir, join(root, "many-out"));
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(UnpassableImport);
      expect((error as UnpassableImport).lines).toEqual([
        "tests/test.sh:2: pip install totally-not-in-the-image: scifi-sci:local has no totally-not-in-the-image",
        "tests/test.sh:3: git clone: fetches over the network",
        "tests/test.sh:4: curl | bash: runs a script fetched from the network",
        "tests/test.sh:5: apt-get install r-base-core: scifi-sci:local has no r-base-core",
      ]);
      expect(existsSync(join(root, "many-out"))).toBe(false);
      const allowed = importHarbor(dir, join(root, "many-allowed"), { allowUnpassable: true });
      expect(allowed.mapped).toContainEqual(
        expect.stringMatching(
          /^tests\/test\.sh:1: pip install numpy pandas: scifi-sci:local has numpy [\d.]+, pandas [\d.]+ -> dropped$/,
        ),
      );
      // An image that cannot be looked into is no image to map to: refused, saying why.
      expect(() =>
        importHarbor(dir, join(root, "no-image"), { image: "scifi-no-such-image:nowhere" }),
      ).toThrow(
        /tests\/test\.sh:1: pip install numpy pandas: could not look inside scifi-no-such-image:nowhere with docker: /,
      );
    });
  },
);

describe("scifi import harbor: what it does not take in is listed", () => {
  it("lists a compose file with its services, and a file nothing copies, on the terminal and in the notes", async () => {
    const out = join(root, "compose");
    const cli = await runScifi(
      root,
      ["import", "harbor", join(FIXTURES, "compose-service"), "-o", out, "--no-audit"],
      60_000,
    );
    expect(cli.code).toBe(0);
    const compose =
      "environment/docker-compose.yaml: a compose file (services: main, cache): scifi runs one sandbox per task, without other services, their ports, volumes or environment; the task must work without them";
    const unused =
      "environment/README-author.txt: not used (no Dockerfile COPY brings it into the working folder)";
    for (const line of [compose, unused, "solution/ is not copied: the agent would see it"]) {
      expect(cli.stdout).toContain(`  - ${line}`);
      expect(readFileSync(join(out, "harbor-import.md"), "utf8")).toContain(`- ${line}`);
    }
    expect(cli.stdout).toContain("audit: skipped (--no-audit)");
  });
});
