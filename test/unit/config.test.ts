import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { advertisedApiUrl, ConfigError, loadConfig } from '../../src/config.js';
import { VERSION } from '../../src/version.js';

describe('configuration layers', () => {
  it('takes flags over environment over file over defaults', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-cfg-'));
    fs.writeFileSync(path.join(dir, 'ztc.yaml'), 'port: 2000\nadminUsername: fileadmin\nhostnames: [a.example, b.example]\nsessionTimeoutMinutes: 5\n');
    const env = { ZTC_DATA_DIR: dir, ZTC_PORT: '3000' };
    const cfg = loadConfig({ adminUsername: 'flagadmin' }, env);
    expect(cfg).toMatchObject({ dataDir: dir, port: 3000, adminUsername: 'flagadmin', hostnames: ['a.example', 'b.example'], sessionTimeoutMinutes: 5, bind: '0.0.0.0' });
    expect(loadConfig({ port: '4000' }, env).port).toBe(4000);
    expect(loadConfig({}, { ZTC_DATA_DIR: dir }).port).toBe(2000);
    expect(loadConfig({}, { ZTC_DATA_DIR: dir, ZTC_HOSTNAMES: 'x.example,y.example' }).hostnames).toEqual(['x.example', 'y.example']);
  });

  it('takes the advertised API address as upstream\'s edge.api.address, and names its host in the certificate', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-cfg-'));
    const cfg = loadConfig({ dataDir: dir, hostnames: 'vm', apiAddress: 'https://ctrl.example.com:8441/' }, {});
    expect(cfg.apiAddress).toBe('ctrl.example.com:8441');
    expect(cfg.hostnames).toEqual(['vm', 'ctrl.example.com']);
    expect(advertisedApiUrl(cfg)).toBe('https://ctrl.example.com:8441');
    expect(advertisedApiUrl(loadConfig({ dataDir: dir, hostnames: 'vm', port: '1280' }, {}))).toBe('https://vm:1280');
    expect(loadConfig({ dataDir: dir }, { ZTC_API_ADDRESS: 'ctrl.example.com:443' }).apiAddress).toBe('ctrl.example.com');
    expect(() => loadConfig({ dataDir: dir, apiAddress: 'ctrl.example.com/path' }, {})).toThrow(/host:port/);
  });

  it('explains bad settings', () => {
    expect(() => loadConfig({ port: 'many' }, {})).toThrow(ConfigError);
    expect(() => loadConfig({ port: 70000 }, {})).toThrow(/65535/);
    expect(() => loadConfig({ sessionTimeoutMinutes: 0 }, {})).toThrow(/at least 1/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-cfg-'));
    fs.writeFileSync(path.join(dir, 'ztc.json'), '{"colour": "red"}');
    expect(() => loadConfig({ dataDir: dir }, {})).toThrow(/unknown setting 'colour'/);
  });

  it('reads the admin password from a file, and refuses both forms at once or an empty file', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-cfg-'));
    const file = path.join(dir, 'pw');
    fs.writeFileSync(file, 'pw-from-file\nignored\n');
    expect(loadConfig({ dataDir: dir }, { ZTC_ADMIN_PASSWORD_FILE: file }).adminPassword).toBe('pw-from-file');
    expect(() => loadConfig({ dataDir: dir, adminPasswordFile: file }, { ZTC_ADMIN_PASSWORD: 'also' })).toThrow(/not both/);
    fs.writeFileSync(file, '');
    expect(() => loadConfig({ dataDir: dir, adminPasswordFile: file }, {})).toThrow(/is empty/);
    expect(() => loadConfig({ dataDir: dir, adminPasswordFile: path.join(dir, 'missing') }, {})).toThrow(/cannot read the admin password file/);
  });

  it('reports the package version', () => {
    const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    expect(VERSION).toBe(pkg.version);
  });
});
