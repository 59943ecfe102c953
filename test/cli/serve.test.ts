// `bin/ztc serve` exactly as automation runs it: ready on /version, clean exit on SIGTERM (within
// seconds, whatever connections are open; through `npm start` too).
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import net from 'node:net';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { selfSignedCert } from '../helpers/certs.js';
import { untilAnswering, untilPrinted, killLeftovers, serveOnFreePorts, tracked } from '../helpers/cli.js';
import { MGMT, tempDataDir, testDatabase } from '../helpers/controller.js';

// A failing test must not leave the processes it started running.
afterAll(killLeftovers);

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

const get = (url: string) =>
  new Promise<number>((resolve) => {
    https.get(url, { rejectUnauthorized: false, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', () => resolve(0));
  });

/** Start bin/ztc serve with these flags; resolves once /version answers (or the process ends). */
async function serve(port: number, flags: string[]) {
  const db = await testDatabase();
  const child = tracked(spawn(process.execPath, [path.resolve('bin/ztc'), 'serve', '--port', String(port), ...flags, ...(db ? ['--db', db] : [])], { env: { ...process.env, ZTC_DATA_DIR: '', ZTC_LOG_FORMAT: '' } }));
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d) => (out.stdout += d));
  child.stderr.on('data', (d) => (out.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let ended = false;
  void exited.then(() => (ended = true));
  await untilAnswering(() => get(`https://127.0.0.1:${port}/version`), () => ended);
  await untilPrinted(() => out.stdout, /^log in with:/m, () => ended);
  return { child, out, exited };
}

/** The banner sample in README.md, under "then serves HTTPS on port 1280". */
const readmeBanner = () => /```\n(ztc controller v[\s\S]*?)```/.exec(fs.readFileSync('README.md', 'utf8'))![1];

describe('bin/ztc serve', { timeout: 90_000 }, () => {
  it('prints the banner README shows, the generated password framed, and one short line per request in text format', async () => {
    const port = await freePort();
    const dir = tempDataDir();
    const { child, out, exited } = await serve(port, ['--data-dir', dir, '--log-format', 'text']);
    expect(await get(`https://127.0.0.1:${port}/edge/management/v1/identities`)).toBe(401);
    // The root CA's fingerprint in the form the login prompt shows (SHA-256, colon hex).
    const root = new X509Certificate(fs.readFileSync(path.join(dir, 'pki', 'root.pem'))).fingerprint256.toLowerCase();
    expect(out.stdout).toContain(`  root CA       SHA-256 ${root}   (what ztc login asks you to trust)\n`);
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    // Every labelled line of README's sample, in the same order.
    const labels = (text: string) => [...text.matchAll(/^ {2}([a-zA-Z][a-zA-Z ]+?) {2,}/gm)].map((m) => m[1]);
    expect(labels(out.stdout)).toEqual(labels(readmeBanner()));
    // The banner comes once every listener is up: serve()'s readiness polls of /version may be
    // answered, and logged, just before it on a loaded machine (seen on PostgreSQL in .ci/run).
    expect(out.stdout.replace(/^(\d\d:\d\d:\d\d GET \/version 200 [\d.]+ ms\n)*/, '')).toMatch(/^ztc controller v\d/);
    const box = /┌─+┐\n {2}│ admin password for 'admin': (\S+) {3}\(generated; shown only this once\) │\n {2}└─+┘/.exec(out.stdout);
    expect(box).not.toBeNull();
    expect(out.stdout).toMatch(/^\d\d:\d\d:\d\d GET \/edge\/management\/v1\/identities 401 \d+\.\d ms$/m);
    expect(out.stdout).not.toMatch(/^\{/m);
  });

  it('logs JSON lines when asked (the default off a terminal)', async () => {
    const port = await freePort();
    const { child, out, exited } = await serve(port, ['--data-dir', tempDataDir(), '--admin-password', 'serve-pass-1']);
    await get(`https://127.0.0.1:${port}/version`);
    // The line is written once the response has finished on the server's side, which can be just after
    // the client has read it: waited for, not raced with the stop (CI once saw SIGTERM win).
    await untilPrinted(() => out.stdout, /"msg":"request completed"/, () => false, 10_000);
    child.kill('SIGTERM');
    await exited;
    const json = out.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string });
    expect(json.some((l) => l.msg === 'request completed')).toBe(true);
  });

  it('says which port is taken and what to do, without a stack trace', async () => {
    const port = await freePort();
    const first = await serve(port, ['--data-dir', tempDataDir(), '--admin-password', 'serve-pass-1', '--log-level', 'warn']);
    const second = await serve(port, ['--data-dir', tempDataDir(), '--admin-password', 'serve-pass-1', '--log-level', 'warn']);
    expect(await second.exited).toBe(1);
    expect(second.out.stderr).toMatch(new RegExp(`^error: This port on 0\\.0\\.0\\.0 is already in use \\(another ztc, an OpenZiti controller or router, or another program\\)\\. Stop what holds it, or choose another:\\n {2}${port} {2}the APIs: --port N`, 'm'));
    expect(second.out.stderr).not.toMatch(/\n\s+at /);
    // Every busy port at once, each with its flag: the APIs', the edge router's and the control channel's.
    const [router, ctrl] = [await freePort(), await freePort()];
    const holders = await Promise.all([router, ctrl].map((p) => new Promise<net.Server>((resolve) => { const s = net.createServer(); s.listen(p, '0.0.0.0', () => resolve(s)); })));
    const third = await serve(port, ['--data-dir', tempDataDir(), '--admin-password', 'serve-pass-1', '--log-level', 'warn', '--router-port', String(router), '--ctrl-port', String(ctrl)]);
    expect(await third.exited).toBe(1);
    expect(third.out.stderr).toMatch(new RegExp(`These ports on 0\\.0\\.0\\.0 are already in use \\(.*\\)\\. Stop what holds them, or choose another:\\n {2}${port} {2}the APIs: --port N.*\\n {2}${router} {2}the edge router: --router-port N.*--no-router\\n {2}${ctrl} {2}routers' control channel: --ctrl-port N.*--no-ctrl`));
    for (const h of holders) h.close();
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
  });

  // Only root can start it as an unprivileged user (and as root the low ports would bind): CI runs as root.
  it.skipIf(process.getuid?.() !== 0)('says which ports need privileges when it may not bind them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-unprivileged-'));
    fs.chmodSync(dir, 0o777);
    const db = await testDatabase();
    const child = tracked(spawn(process.execPath, [path.resolve('bin/ztc'), 'serve', '-d', path.join(dir, 'data'), '--port', '443', '--router-port', '444', '--no-ctrl', '--admin-password', 'serve-pass-1', ...(db ? ['--db', db] : [])], {
      uid: 65534, gid: 65534, cwd: dir, env: { ...process.env, HOME: dir, ZTC_DATA_DIR: '', ZTC_LOG_FORMAT: '' },
    }));
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    expect(await new Promise<number | null>((resolve) => child.on('exit', resolve))).toBe(1);
    expect(stderr).toMatch(/Not allowed to listen on these ports on 0\.0\.0\.0: ports below 1024 need privileges .*Choose another:\n {2}443 {2}the APIs: --port N.*\n {2}444 {2}the edge router: --router-port N/);
    expect(stderr).not.toMatch(/\n\s+at /);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('starts from flags, answers /version when ready, and stops cleanly on SIGTERM', async () => {
    const dir = tempDataDir();
    const db = await testDatabase();
    const served = await serveOnFreePorts(1, ([p]) => ['--data-dir', dir, '--port', String(p), '--admin-password', 'serve-pass-1', '--log-level', 'warn', '--events-file', path.join(dir, 'events.jsonl'), ...(db ? ['--db', db] : [])], { ...process.env, ZTC_DATA_DIR: '' });
    const { child } = served;
    const [port] = served.ports;
    const exited = new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', (code) => resolve(code))));
    expect(await get(`https://127.0.0.1:${port}/version`)).toBe(200);
    const out = served.output();
    expect(out).toMatch(new RegExp(`listening\\s+https://0\\.0\\.0\\.0:${port}`));
    expect(out).toMatch(/admin\s+admin \(password as given\)/);
    expect(out).toContain(`  events file   ${path.join(dir, 'events.jsonl')}   (`);
    // What to paste: the program as started (bin/ztc from a clone), and no password on the command line.
    expect(out).toMatch(/^log in with: {3}(bin\/ztc|ztc) login https:\/\/\S+ -u admin {3}\(asks for the password\)$/m);
    expect(out).not.toContain('serve-pass-1');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(await get(`https://127.0.0.1:${port}/version`)).toBe(0);
  });

  it('takes the admin password from a file, so it never shows in the process list', async () => {
    const dir = tempDataDir();
    const db = await testDatabase();
    const secret = 'from-a-file-7';
    fs.writeFileSync(`${dir}/admin-password`, `${secret}\n`, { mode: 0o600 });
    const served = await serveOnFreePorts(1, ([p]) => ['--data-dir', dir, '--port', String(p), '--admin-password-file', `${dir}/admin-password`, '--log-level', 'warn', ...(db ? ['--db', db] : [])], { ...process.env, ZTC_DATA_DIR: '', ZTC_ADMIN_PASSWORD: '' });
    const { child } = served;
    const [port] = served.ports;
    const exited = new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.on('exit', (code) => resolve(code))));
    expect(await get(`https://127.0.0.1:${port}/version`), served.output()).toBe(200);
    if (fs.existsSync(`/proc/${child.pid}/cmdline`)) expect(fs.readFileSync(`/proc/${child.pid}/cmdline`, 'utf8')).not.toContain(secret);
    const login = (password: string) =>
      new Promise<number>((resolve) => {
        const req = https.request(`https://127.0.0.1:${port}/edge/client/v1/authenticate?method=password`, { method: 'POST', rejectUnauthorized: false, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', () => resolve(0));
        req.end(JSON.stringify({ username: 'admin', password }));
      });
    expect(await login(secret)).toBe(200);
    expect(await login(`${secret}\n`)).toBe(401);
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stops within seconds on SIGTERM with an event stream, idle and silent connections open on every port', async () => {
    const [port, routerPort, ctrlPort] = [await freePort(), await freePort(), await freePort()];
    const { child, out, exited } = await serve(port, ['--data-dir', tempDataDir(), '--admin-password', 'serve-pass-1', '--log-format', 'text', '--router-port', String(routerPort), '--ctrl-port', String(ctrlPort)]);
    await untilPrinted(() => out.stdout, /edge router {3}tls:/, () => false, 10_000);
    const login = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = https.request(`https://127.0.0.1:${port}${MGMT}/authenticate?method=password`, { method: 'POST', rejectUnauthorized: false, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ username: 'admin', password: 'serve-pass-1' }));
    });
    expect(login.status).toBe(200);
    const token = (JSON.parse(login.body) as { data: { token: string } }).data.token;
    // An events stream (what `ztc events --follow` reads): it never ends by itself.
    const sse = { text: '', ended: false };
    const sseEnded = new Promise<void>((resolve) => {
      https.get(`https://127.0.0.1:${port}${MGMT}/events`, { rejectUnauthorized: false, agent: false, headers: { 'zt-session': token } }, (res) => {
        res.setEncoding('utf8');
        res.on('data', (d: string) => (sse.text += d));
        res.on('end', () => {
          sse.ended = true;
          resolve();
        });
        res.on('error', () => resolve());
      }).on('error', () => resolve());
    });
    await untilPrinted(() => sse.text, /^: ztc events\n\n/, () => false, 10_000);
    // An idle kept-alive connection, one that finished TLS and never sent a request, one still before TLS.
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    await new Promise<void>((resolve) => https.get(`https://127.0.0.1:${port}/version`, { rejectUnauthorized: false, agent }, (res) => res.resume().on('end', resolve)));
    const sockets: (net.Socket | tls.TLSSocket)[] = [];
    const connectTls = (p: number, o: tls.ConnectionOptions = {}) =>
      new Promise<tls.TLSSocket>((resolve, reject) => {
        const s = tls.connect({ host: '127.0.0.1', port: p, rejectUnauthorized: false, ...o }, () => resolve(s));
        s.on('error', reject);
        sockets.push(s);
      });
    await connectTls(port);
    // The edge router: a TLS connection with a client certificate (admitted, waiting for its hello) and a bare TCP one.
    const client = selfSignedCert('sdk');
    const edge = await connectTls(routerPort, { cert: client.certPem, key: client.keyPem });
    for (const p of [port, routerPort, ctrlPort]) sockets.push(net.connect(p, '127.0.0.1'));
    await new Promise((r) => setTimeout(r, 300));
    for (const s of sockets) s.on('error', () => {});
    expect(edge.destroyed).toBe(false);
    const started = Date.now();
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running after 8 s'), 8000))]);
    const took = Date.now() - started;
    expect(code).toBe(0);
    expect(took).toBeLessThan(8000);
    // The stream ended, with its last words.
    await Promise.race([sseEnded, new Promise((r) => setTimeout(r, 1000))]);
    expect(sse.ended).toBe(true);
    expect(sse.text).toMatch(/: the controller is stopping\n\n$/);
    expect(out.stdout).toMatch(/shutting down signal=SIGTERM\n(.*\n)*\d\d:\d\d:\d\d stopped ms=\d+\n/);
    agent.destroy();
    for (const s of sockets) s.destroy();
  });

  // `npm start` runs the script in a shell: the server must be the process npm passes SIGTERM to (exec),
  // not the shell's child, which lived on after npm and the shell had gone.
  it('npm start passes SIGTERM on to the server, sent to npm or to its process group', async () => {
    for (const target of ['npm', 'group'] as const) {
      const dir = tempDataDir();
      const port = await freePort();
      const db = await testDatabase();
      const npm = tracked(spawn('npm', ['start', '--', '--data-dir', dir, '--port', String(port), '--no-router', '--no-ctrl', '--admin-password', 'serve-pass-1', '--log-format', 'json', ...(db ? ['--db', db] : [])], {
        env: { ...process.env, ZTC_DATA_DIR: '', ZTC_LOG_FORMAT: '' },
        detached: true,
      }));
      let out = '';
      npm.stdout.on('data', (d) => (out += d));
      npm.stderr.on('data', (d) => (out += d));
      // 'close', not 'exit': npm may exit before the server's last lines (same pipes) have been read.
      const npmExited = new Promise<number | null>((resolve) => npm.on('close', (code) => resolve(code)));
      // A stale build is rebuilt first (scripts/build-if-stale.mjs): a minute at most.
      expect(await untilAnswering(() => get(`https://127.0.0.1:${port}/version`), () => npm.exitCode !== null, 120_000)).toBe(200);
      // The banner's last line comes once the server is whole, its signal handlers in place: a SIGTERM
      // earlier (between listening and the rest of the start, longer on PostgreSQL) ends the process
      // as Node's default does, with no shutdown to see.
      await untilPrinted(() => out, /^log in with:/m, () => npm.exitCode !== null, 30_000);
      const pid = Number(/"pid":(\d+)[^\n]*"msg":"Server listening at/.exec(out)![1]);
      expect(pid).not.toBe(npm.pid);
      const alive = () => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      };
      expect(alive()).toBe(true);
      if (target === 'npm') process.kill(npm.pid!, 'SIGTERM');
      else process.kill(-npm.pid!, 'SIGTERM');
      const deadline = Date.now() + 8000;
      while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      const stillAlive = alive();
      if (stillAlive) process.kill(pid, 'SIGKILL');
      expect(stillAlive, `the server (pid ${pid}) outlived SIGTERM to ${target}`).toBe(false);
      await npmExited;
      // It stopped by its own shutdown (a second SIGTERM, npm's and the group's, did not cut it short).
      expect(out).toMatch(/"msg":"stopped"/);
      expect(await get(`https://127.0.0.1:${port}/version`)).toBe(0);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
