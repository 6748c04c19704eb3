// Which CPUs an unprivileged Apptainer sandbox is pinned to (runner/sandbox/apptainer/cpus.ts): `want`
// of the allowed ones, consecutive with wrap-around, starting where the sandbox name decides, so
// that concurrent sandboxes spread over the machine. The pinning itself is tested in the harness.
import { describe, expect, it } from "vitest";
import { pickCpus } from "../../runner/sandbox/apptainer.ts";

describe("pickCpus", () => {
  const allowed = [0, 1, 2, 3, 8, 9, 10, 11];

  it("takes the wanted number of allowed CPUs, consecutive with wrap-around, the same for the same name", () => {
    for (const name of ["scifi-a", "scifi-b", "scifi-c", "scifi-d"]) {
      const picked = pickCpus(allowed, 3, name);
      expect(picked).toHaveLength(3);
      expect(new Set(picked).size).toBe(3);
      for (const cpu of picked) expect(allowed).toContain(cpu);
      const positions = picked.map((cpu) => allowed.indexOf(cpu));
      const start = positions.find((p) => !positions.includes((p + allowed.length - 1) % allowed.length));
      expect(start).toBeDefined();
      expect(positions.sort((a, b) => a - b)).toEqual(
        [0, 1, 2].map((i) => ((start ?? 0) + i) % allowed.length).sort((a, b) => a - b),
      );
      expect(pickCpus(allowed, 3, name)).toEqual(picked);
    }
  });

  it("spreads sandboxes over the machine instead of piling them onto the first CPUs", () => {
    const starts = new Set(Array.from({ length: 40 }, (_, i) => pickCpus(allowed, 1, `scifi-run-${i}`)[0]));
    expect(starts.size).toBeGreaterThanOrEqual(5);
  });
});
