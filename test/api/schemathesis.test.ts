// Schemathesis (PyPI, pinned in test/peers/requirements.txt, installed by scripts/test-deps.sh) fuzzes
// both served OpenAPI documents against a controller over real TLS, as the admin and as a plain
// identity: no answer may be a 5xx, and none may break the schema its own document declares for it.
// A fixed seed and a bounded number of examples per operation keep it reproducible, and size the work:
// a run does the same cases however slow the machine, and its wall-clock limits are only a net, set far
// above what a loaded 2-core machine needs (runs took 15-35 s each at load 3-10 here, four at once; a
// newcomer's busy machine took 95 s for the client API's coverage phase alone, which the old 120 s limit
// cut short). The four runs go at once, each against a controller of its own, so one run's changes never
// meet another's.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLIENT, MGMT } from '../helpers/controller.js';
import { startTlsController, type TlsController } from '../helpers/tls.js';

const PYTHON = process.env.ZTC_PYTHON ?? 'python3';
const SEED = 26;
const EXAMPLES = 4;
/** A run's limit: five times the slowest run seen on a busy 2-core machine. */
const RUN_LIMIT_MS = 600_000;
/** One request's: a loaded machine answered some in over 10 s (the run then reported an error, not a finding). */
const REQUEST_TIMEOUT_S = 60;
/**
 * The client API (57 operations) also gets the coverage phase (boundary and near-boundary values of
 * every field) as the admin; the management API's 195 operations only examples and fuzzing, to stay
 * within time. The plain identity's runs check who may do what: the boundaries are validated alike for
 * every caller, so its client run skips coverage (20 s of the suite's CPU).
 */
const phases = (doc: string, who: 'admin' | 'plain') => (doc === 'edge-client' && who === 'admin' ? 'examples,coverage,fuzzing' : 'examples,fuzzing');

/**
 * Operations the admin's run leaves out, each because it would take the run's own access away
 * midway (schemathesis reuses ids it saw in answers, the admin's own among them), after which every
 * answer is a 401 and nothing more is tested; or because each call is costly and tested elsewhere.
 */
const ADMIN_EXCLUDED = [
  'deleteCurrentApiSession', // logout
  'deleteApiSession', 'disableIdentity', 'deleteIdentity', 'updateIdentity', 'patchIdentity', // its session, its identity, its isAdmin
  'updateAuthenticator', 'patchAuthenticator', 'deleteAuthenticator', 'reEnrollAuthenticator', // its password
  'renewPki', // an RSA key per call: test/api/pki-renew.test.ts
  'createDatabaseSnapshot', // a copy of the database per call: test/api/database.test.ts
  'streamEvents', // a stream that never ends by design: test/api/events.test.ts reads it
];
const PLAIN_EXCLUDED = ['deleteCurrentApiSession'];

/** A controller of its own for each run: the four run at once (one after another they were over two minutes of the suite). */
interface Target {
  c: TlsController;
  dir: string;
  token: string;
}
const targets: Target[] = [];

async function target(who: 'admin' | 'plain'): Promise<Target> {
  // Limits off: they would turn the run into 429s, which say nothing about the operations.
  const c = await startTlsController({ authRateLimitPerMinute: 0, apiRateLimitPerMinute: 0 });
  const t: Target = { c, dir: fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-schemathesis-')), token: await c.login() };
  targets.push(t);
  if (who === 'plain') {
    const id = (await c.call('POST', `${MGMT}/identities`, { token: t.token, body: { name: 'fuzz-plain', type: 'User', isAdmin: false } })).body.data.id;
    await c.call('POST', `${MGMT}/authenticators`, { token: t.token, body: { identityId: id, method: 'updb', username: 'fuzz-plain', password: 'fuzz-plain-pass' } });
    t.token = (await c.call('POST', `${CLIENT}/authenticate?method=password`, { body: { username: 'fuzz-plain', password: 'fuzz-plain-pass' } })).body.data.token;
  }
  return t;
}

afterAll(async () => {
  for (const t of targets) {
    await t.c.close();
    fs.rmSync(t.dir, { recursive: true, force: true });
  }
});

interface Run {
  code: number;
  output: string;
}

function schemathesis(doc: string, who: 'admin' | 'plain', { c, dir, token }: Target): Promise<Run> {
  const base = `https://127.0.0.1:${c.running.ctx.config.port}`;
  const ca = path.join(dir, 'ca.pem');
  fs.writeFileSync(ca, c.running.ctx.pki.caBundlePem);
  const excluded = (who === 'admin' ? ADMIN_EXCLUDED : PLAIN_EXCLUDED).flatMap((id) => ['--exclude-operation-id', id]);
  const args = [
    '-m', 'schemathesis.cli', 'run', `${base}/docs/openapi/${doc}.json`, '--url', base,
    '--tls-verify', ca, '-H', `zt-session: ${token}`,
    '--checks', 'not_a_server_error,response_schema_conformance',
    '--phases', phases(doc, who), '--max-examples', String(EXAMPLES), '--seed', String(SEED),
    '--workers', '1', '--no-shrink', '--no-color', '--request-timeout', String(REQUEST_TIMEOUT_S),
    ...excluded,
  ];
  return new Promise((resolve) => {
    // In the test's own directory: schemathesis writes its cache (.schemathesis/) where it runs.
    execFile(PYTHON, args, { cwd: dir, timeout: RUN_LIMIT_MS, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, SCHEMATHESIS_HOOKS: '' } }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
    });
  });
}

/** The run's failures and errors, as schemathesis prints them (one block per operation). */
const problems = (output: string) => output.split('\n').filter((l) => /^_{3,} .* _{3,}$/.test(l)).map((l) => l.replace(/_/g, '').trim());

describe('schemathesis against both OpenAPI documents', () => {
  for (const doc of ['edge-client', 'edge-management'])
    for (const who of ['admin', 'plain'] as const)
      it.concurrent(`${doc} as ${who === 'admin' ? 'the admin' : 'a plain identity'}: no 5xx, no answer outside its schema`, async () => {
        const t = await target(who);
        const run = await schemathesis(doc, who, t);
        expect(run.output, run.output.slice(-4000)).toMatch(/test cases:/i);
        expect(problems(run.output), run.output.slice(-6000)).toEqual([]);
        expect(run.code, run.output.slice(-4000)).toBe(0);
        // The admin's session lasted the whole run (else most operations were only seen answering 401).
        expect((await t.c.call('GET', `${CLIENT}/current-api-session`, { token: t.token })).status).toBe(200);
      }, RUN_LIMIT_MS + 60_000);
});
