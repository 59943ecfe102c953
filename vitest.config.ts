import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/global-setup.ts'],
    // Files that start controllers and `ztc` children wait on them; six files share 2 cores, so a
    // test that takes 5 s alone can take 30 s when the machine is loaded (seen in CI-like runs), and
    // more when other work shares the machine too (load 10-15 seen): limits are nets, well above that.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // vitest's default is the number of cores less one (a single worker on a 2-core machine), yet most
    // files wait on sockets, child processes and timers rather than compute: measured with a per-file
    // CPU probe, the suite spent 358 s of CPU in 290 s on 2 cores with four at a time (each worker busy
    // all along, the cores not), so six go at once.
    maxWorkers: 6,
    sequence: { sequencer: LongestFirst },
    // A worker keeps its loaded modules from one file to the next: each file used to load fastify,
    // node-forge, Kysely and the model afresh (172 s of the suite's CPU in module loading, 17 s with this).
    // Every file starts its own controllers and stores, so nothing a test asserts lives in module state.
    isolate: false,
    // Controllers started by tests (in process or as `ztc serve` children) run their edge router and
    // control channel on any free port, so parallel files never fight over 3022 and 6262.
    // Password hashes at scrypt N=2^12 instead of 2^15: the same code, 8x less CPU per login and per
    // controller's first start (the suite spent over a minute of its CPU hashing). Tests that need
    // hashes to be slow (the hash flood) raise it; crypto-pool.test.ts checks a default-cost hash.
    // And a large import's thread at the API's priority: at nice 10 beside four busy files it got a
    // tenth of a core (import-batched took 103 s instead of 62 beside cli.test). What the lower priority
    // buys a controller, other clients answered during an import, is the bench's to measure.
    env: { ZTC_ROUTER_PORT: '0', ZTC_CTRL_PORT: '0', ZTC_PASSWORD_HASH_COST: '12', ZTC_IMPORT_NICE: '0' },
  },
});
