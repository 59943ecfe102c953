import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // vitest's default is the number of cores less one (a single worker on a 2-core machine), yet most
    // files wait on sockets, child processes and timers rather than compute: four at a time took the
    // suite from about 8 minutes to under 5 here.
    maxWorkers: 4,
    // Controllers started by tests (in process or as `ztc serve` children) run their edge router and
    // control channel on any free port, so parallel files never fight over 3022 and 6262.
    env: { ZTC_ROUTER_PORT: '0', ZTC_CTRL_PORT: '0' },
  },
});
