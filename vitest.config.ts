import { configDefaults, defineConfig } from "vitest/config";

// The failover tests put a whole deployment under load (two hub processes, sentinels or a cluster, 100 widgets,
// a result every 50 ms) and judge /readyz to the second: each runs alone, after the rest, so that the bound
// measures the hub and not another test file's processes sharing the two cores.
const FAILOVER = ["test/redis-sentinel.test.ts", "test/redis-cluster.test.ts"];

export default defineConfig({
  test: {
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default", "./test/support/summary-reporter.ts"],
    setupFiles: ["./test/support/setup.ts"],
    projects: [
      {
        extends: true as const,
        test: { name: "hub", include: ["test/**/*.test.ts"], exclude: [...configDefaults.exclude, ...FAILOVER] },
      },
      ...FAILOVER.map((file, index) => ({
        extends: true as const,
        test: { name: file.replace(/^test\/|\.test\.ts$/g, ""), include: [file], sequence: { groupOrder: index + 1 } },
      })),
    ],
  },
});
