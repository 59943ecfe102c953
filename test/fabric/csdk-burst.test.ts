// A burst of closes through the embedded router with OpenZiti's own C SDK (libziti 0.29.3 in PyPI
// openziti 0.6.0) on both ends (issue 43, item 4): a dialer opens 100 connections to a host, holds them,
// closes them all at once; a second dialer must still reach the host. libziti 0.29 reads at most 32 of
// its messages per read of its TLS socket (its pool of message buffers): whatever else that read brought
// waits for the socket to become readable again, which a quiet router never makes it. So the router
// hands a burst to an SDK a few dozen frames at a time (channel.ts, SDK_FRAMES_PER_WRITE).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { jsonLines } from '../helpers/json-lines.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ECHO_DEMO_PY } from '../../src/cli/demo/echo-demo.js';
import { startNetwork, type TestNetwork } from '../helpers/network.js';

const PYTHON = process.env.ZTC_PYTHON ?? 'python3';
const BURST = new URL('../peers/csdk-burst.py', import.meta.url).pathname;
const env = { ...process.env, ZITI_LOG: process.env.CSDK_ZITI_LOG ?? '1' };

/** Lines of JSON a child prints, as they come. */
function lines(child: ChildProcess) {
  const json = jsonLines(child);
  return {
    next(ms: number, what: string, log: () => string): Promise<Record<string, unknown>> {
      return Promise.race([json.next(), new Promise<never>((_, no) => setTimeout(() => no(new Error(`${what} within ${ms / 1000} s:\n${log()}`)), ms))]);
    },
    /** The next line with `key` (others, e.g. the host's accept counts, are skipped). */
    async find(key: string, ms: number, what: string, log: () => string) {
      const until = Date.now() + ms;
      for (;;) {
        const v = await this.next(Math.max(1, until - Date.now()), what, log);
        if (key in v) return v;
      }
    },
  };
}

let n: TestNetwork;
let dir: string;
beforeAll(async () => {
  n = await startNetwork();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-csdk-burst-'));
}, 60_000);
afterAll(async () => {
  await n?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function enrolled(name: string, roles: string[]): Promise<string> {
  const made = await n.api('POST', '/identities', { name, type: 'Device', isAdmin: false, roleAttributes: roles, enrollment: { ott: true } });
  const jwt = (await n.api('GET', `/identities/${made.body.data.id}`)).body.data.enrollment.ott.jwt;
  const jwtFile = path.join(dir, `${name}.jwt`);
  fs.writeFileSync(jwtFile, jwt);
  const out = path.join(dir, `${name}.json`);
  const script = path.join(dir, 'echo-demo.py');
  if (!fs.existsSync(script)) fs.writeFileSync(script, ECHO_DEMO_PY);
  const code = await new Promise<number | null>((resolve) => spawn(PYTHON, [script, 'enroll', jwtFile, out], { env, stdio: 'ignore' }).on('close', resolve));
  expect(code).toBe(0);
  return out;
}

/**
 * A host, a first dialer that opens `count` connections and closes them all at once, then a second
 * dialer that must get through. `stopHost`: the host is not scheduled (SIGSTOP) while the closes come,
 * so it reads them all in one go when it runs again.
 */
async function burst(service: string, count: number, o: { stopHost?: boolean } = {}) {
  await n.service(service);
  const [hostId, clientId] = await Promise.all([enrolled(`${service}-host`, [`${service}-hosts`]), enrolled(`${service}-client`, [`${service}-clients`])]);
  const host = spawn(PYTHON, [BURST, 'host', hostId, service], { env });
  let log = '';
  host.stderr!.on('data', (d) => (log += d));
  const children: ChildProcess[] = [host];
  const dialer = (count: number) => {
    const c = spawn(PYTHON, [BURST, 'dial', clientId, service, String(count)], { env });
    c.stderr!.on('data', (d) => (log += d));
    children.push(c);
    return lines(c);
  };
  const why = () => log.slice(-4000);
  try {
    expect(await lines(host).next(30_000, 'the host did not listen', why)).toEqual({ listening: service });
    await expect.poll(async () => (await n.api('GET', `/terminators?filter=${encodeURIComponent(`service.name = "${service}"`)}`)).body.data.length, { timeout: 15_000, interval: 200 }).toBe(1);
    const first = dialer(count);
    expect(await first.find('opened', 120_000, 'the first dialer did not open its connections', why)).toMatchObject({ opened: count, failures: 0 });
    if (o.stopHost) host.kill('SIGSTOP');
    expect(await first.find('closed', 30_000, 'the first dialer did not close', why)).toEqual({ closed: count });
    if (o.stopHost) {
      await new Promise((r) => setTimeout(r, 300));
      host.kill('SIGCONT');
    }
    const second = dialer(3);
    expect(await second.find('opened', 60_000, 'the second dialer did not finish', why)).toMatchObject({ opened: 3, failures: 0 });
  } finally {
    for (const c of children) c.kill('SIGKILL');
  }
}

describe('a C SDK host behind the embedded router', () => {
  it('keeps serving after a client closes 100 connections at once', () => burst('csdk-burst', 100), 300_000);

  it('catches up when it was not running while the closes came', () => burst('csdk-burst-stopped', 100, { stopHost: true }), 300_000);
});
