import { defineConfig } from 'vitest/config';

// Files a pass of scripts/test.mjs leaves out (comma separated, relative to the root): the CLI's
// --exclude reaches the root config, not a project's, so the script says it here.
const passExclude = (process.env.BIANBU_TEST_EXCLUDE ?? '').split(',').filter(Boolean);

export default defineConfig({
  test: {
    projects: [
      { test: { name: 'unit', sequence: { groupOrder: 0 }, include: ['tests/unit/**/*.test.ts'], environment: 'node' } },
      {
        test: {
          name: 'integration',
          sequence: { groupOrder: 1 },
          include: ['tests/integration/**/*.test.ts'],
          // riscv64 boards under QEMU (TCG) and the board-hosts cluster have projects of their own, below.
          exclude: [
            'tests/integration/riscv-*.test.ts',
            'tests/integration/board-hosts-cluster.test.ts',
            ...passExclude,
          ],
          testTimeout: 60_000,
          // Building an app with a real lab (boards booted, PGlite migrated) took over 60 s on a loaded
          // machine: a set-up is not a timing assertion.
          hookTimeout: 120_000,
          pool: 'forks',
          maxWorkers: 2,
          // riscv64 QEMU boards boot for a minute: only the suites about them ask for them.
          env: { BIANBU_RISCV_BOARDS: '0' },
        },
      },
      {
        test: {
          // Real riscv64 boards: each file boots QEMU machines that take a core each under TCG. One file
          // at a time, so that two files' machines do not halve each other's speed on a 2-core host
          // (four at once made boots, DHCP and exec'ing slow enough to race the tests' waits).
          name: 'integration-riscv',
          sequence: { groupOrder: 2 },
          include: ['tests/integration/riscv-*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          pool: 'forks',
          fileParallelism: false,
          env: { BIANBU_RISCV_BOARDS: '0' },
        },
      },
      {
        test: {
          // The board farm as a cluster of network namespaces (two instances, two board hosts, a client):
          // it needs PostgreSQL and Redis shared by its instances, so it runs in the PostgreSQL pass.
          name: 'integration-cluster',
          sequence: { groupOrder: 2 },
          include: ['tests/integration/board-hosts-cluster.test.ts'],
          testTimeout: 240_000,
          hookTimeout: 240_000,
          pool: 'forks',
          fileParallelism: false,
          env: { BIANBU_RISCV_BOARDS: '0' },
        },
      },
      {
        test: {
          name: 'e2e',
          sequence: { groupOrder: 3 },
          include: ['tests/e2e/**/*.test.ts'],
          // scripts/test.mjs runs the riscv64 board's file in its own lane.
          exclude: passExclude,
          testTimeout: 90_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          env: { BIANBU_RISCV_BOARDS: '0' },
        },
      },
    ],
  },
});
