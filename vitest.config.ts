import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: "forks",
    // Two cores: container-heavy suites compete for the same engine.
    maxWorkers: 2,
    reporters: ["default"],
  },
});
