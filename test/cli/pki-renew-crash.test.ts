// `pki renew intermediate` and a crash: the switch of files is journaled, so a process killed at any
// point leaves a pki/ that the next start finishes (or keeps as it was), never one without its
// intermediate; and a pki/ left half-renewed by the unjournaled renewal of earlier versions stops
// `ztc serve` with the commands that put it back, instead of a new intermediate made as on a first start.
import { execSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renewPki } from '../../src/model/pki/pki.js';
import { commitSwitch, JOURNAL, type NewFile } from '../../src/model/pki/pki-switch.js';
import { openDataDir } from '../../src/server/controller.js';
import { ADMIN, tempDataDir, testConfig } from '../helpers/controller.js';
import { cliRunner } from '../helpers/cli.js';

const { ztc, cleanup } = cliRunner();
const dirs: string[] = [];
const fresh = () => {
  const d = tempDataDir();
  dirs.push(d);
  return d;
};
afterAll(() => {
  cleanup();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const pkiFile = (dir: string, name: string) => path.join(dir, 'pki', name);
const read = (dir: string, name: string) => fs.readFileSync(pkiFile(dir, name), 'utf8');
const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;
const keyMatches = (certPem: string, keyPem: string) =>
  new X509Certificate(certPem).publicKey.export({ type: 'spki', format: 'der' }).equals(createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' }));

/** Open the data dir as `ztc serve` does at start; returns the intermediate it serves with. */
async function start(dir: string) {
  const opened = await openDataDir(testConfig(dir, { db: '' }));
  try {
    return { intermediatePem: opened.ctx.pki.intermediatePem, serverPem: opened.ctx.pki.serverPem, serverKeyPem: opened.ctx.pki.serverKeyPem, retired: opened.ctx.pki.retiredIntermediatePems };
  } finally {
    await opened.close();
  }
}

describe('a crash during pki renew intermediate', () => {
  // New files as a renewal makes them: every temp data dir starts from the same PKI template, so an
  // intermediate renewed in one is signed by the root of all.
  let files: NewFile[] = [];
  beforeAll(async () => {
    const scratch = fresh();
    await renewPki(scratch, ['localhost'], 'intermediate');
    files = ['intermediate.key', 'intermediate.pem', 'server.key', 'server.pem'].map((name) => ({ name, data: read(scratch, name), secret: name.endsWith('.key') }));
  });

  it('before the switch commits, leaves the old intermediate in use and drops the new files', async () => {
    const dir = fresh();
    const old = read(dir, 'intermediate.pem');
    // As a kill between writing the new files and renaming the journal into place leaves it.
    for (const f of files) fs.writeFileSync(pkiFile(dir, f.name + '.new'), f.data.slice(0, f.data.length / 2));
    fs.writeFileSync(pkiFile(dir, `${JOURNAL}.tmp`), '{"at":1,');
    const s = await start(dir);
    expect(fingerprint(s.intermediatePem)).toBe(fingerprint(old));
    expect(fs.readdirSync(path.join(dir, 'pki')).filter((n) => n.endsWith('.new') || n.includes(JOURNAL))).toEqual([]);
  });

  it('after it commits, at every point of the switch, is finished by the next start', async () => {
    const newMid = files.find((f) => f.name === 'intermediate.pem')!.data;
    // The renames applySwitch makes, in its order: each old file to retired/, then the new one in place.
    const template = fresh();
    const oldMid = read(template, 'intermediate.pem');
    const steps = files.length * 2;
    for (let done = 0; done <= steps; done++) {
      const dir = fresh();
      const journal = commitSwitch(path.join(dir, 'pki'), 1_700_000_000_000 + done, 'intermediate', files);
      let made = 0;
      for (const name of journal.names) {
        if (made++ >= done) break;
        fs.mkdirSync(pkiFile(dir, 'retired'), { recursive: true });
        fs.renameSync(pkiFile(dir, name), pkiFile(dir, `retired/${path.basename(name, path.extname(name))}-${journal.at}${path.extname(name)}`));
        if (made++ >= done) break;
        fs.renameSync(pkiFile(dir, name + '.new'), pkiFile(dir, name));
      }
      const s = await start(dir);
      expect(fingerprint(s.intermediatePem), `killed after ${done} renames`).toBe(fingerprint(newMid));
      expect(keyMatches(read(dir, 'intermediate.pem'), read(dir, 'intermediate.key'))).toBe(true);
      expect(keyMatches(s.serverPem, s.serverKeyPem)).toBe(true);
      expect(new X509Certificate(s.serverPem).checkIssued(new X509Certificate(newMid))).toBe(true);
      // The replaced intermediate stays trusted: what it issued keeps working.
      expect(s.retired.map(fingerprint)).toContain(fingerprint(oldMid));
      expect(fs.existsSync(pkiFile(dir, JOURNAL))).toBe(false);
    }
  });

  it('a renewal through the API leaves no journal and no staged file behind', async () => {
    const dir = fresh();
    const before = read(dir, 'intermediate.pem');
    await renewPki(dir, ['localhost'], 'intermediate');
    const names = fs.readdirSync(path.join(dir, 'pki'));
    expect(names.filter((n) => n.endsWith('.new') || n.includes(JOURNAL))).toEqual([]);
    expect(fingerprint(read(dir, 'intermediate.pem'))).not.toBe(fingerprint(before));
    expect(fs.readdirSync(pkiFile(dir, 'retired')).filter((n) => n.startsWith('intermediate-'))).toHaveLength(2);
  });
});

describe('a pki/ half-renewed by an earlier version', () => {
  it('stops ztc serve with the commands that put the intermediate back, and those commands work', async () => {
    const dir = fresh();
    const original = fingerprint(read(dir, 'intermediate.pem'));
    // What the unjournaled renewal left when killed before the new intermediate was written.
    fs.mkdirSync(pkiFile(dir, 'retired'), { recursive: true });
    for (const [from, to] of [['intermediate.pem', 'intermediate-1700000000000.pem'], ['intermediate.key', 'intermediate-1700000000000.key'], ['server.pem', 'server-1700000000000.pem'], ['server.key', 'server-1700000000000.key']]) {
      fs.renameSync(pkiFile(dir, from), pkiFile(dir, `retired/${to}`));
    }
    const served = await ztc('serve', '--data-dir', dir, '--port', '0', '--admin-password', ADMIN.password, '--no-router', '--no-ctrl');
    expect(served.code).toBe(1);
    expect(served.stdout).not.toMatch(/listening/);
    expect(served.stderr).toMatch(/pki\/ is half-renewed: intermediate\.pem and intermediate\.key are missing/);
    expect(served.stderr).toMatch(/break the chain of every enrolled identity/);
    expect(served.stderr).not.toMatch(/^\s+at /m);
    // Nothing was created in their place.
    expect(fs.existsSync(pkiFile(dir, 'intermediate.pem'))).toBe(false);
    const commands = served.stderr.split('\n').filter((l) => /^\s+mv /.test(l));
    expect(commands).toHaveLength(2);
    for (const c of commands) execSync(c.trim());
    const s = await start(dir);
    expect(fingerprint(s.intermediatePem)).toBe(original);
  });

  it('names only the file that is missing, and refuses a key of another generation', async () => {
    const dir = fresh();
    fs.mkdirSync(pkiFile(dir, 'retired'), { recursive: true });
    fs.renameSync(pkiFile(dir, 'intermediate.pem'), pkiFile(dir, 'retired/intermediate-1700000000000.pem'));
    await expect(start(dir)).rejects.toThrow(/intermediate\.pem is missing .*\n  mv \S+intermediate-1700000000000\.pem \S+intermediate\.pem\n/s);
    fs.renameSync(pkiFile(dir, 'retired/intermediate-1700000000000.pem'), pkiFile(dir, 'intermediate.pem'));
    fs.copyFileSync(pkiFile(dir, 'server.key'), pkiFile(dir, 'intermediate.key'));
    await expect(start(dir)).rejects.toThrow(/intermediate\.key is not the key of .*intermediate\.pem/);
  });
});
