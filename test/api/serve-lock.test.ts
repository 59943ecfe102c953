// One `ztc serve` per data dir: a second start on the same SQLite data dir is refused with the first one's
// pid (it would share the database, double the password budget and fight for the ports); a lock left by
// a process that died is taken over.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startController } from '../../src/server/controller.js';
import { DataDirBusy } from '../../src/server/serve-lock.js';
import { tempDataDir, testConfig, testDatabase } from '../helpers/controller.js';

describe('one controller per data dir', () => {
  it('refuses a second start naming the first one\'s pid, and starts once the first stopped', async () => {
    const dir = tempDataDir();
    const config = testConfig(dir, { port: 0, bind: '127.0.0.1', db: await testDatabase() });
    const first = await startController(config);
    try {
      const second = startController({ ...config, port: 0 });
      await expect(second).rejects.toThrow(DataDirBusy);
      await expect(second).rejects.toThrow(new RegExp(`pid ${process.pid}`));
    } finally {
      await first.close();
    }
    expect(fs.existsSync(path.join(dir, 'serve.lock'))).toBe(false);
    const again = await startController({ ...config, port: 0 });
    await again.close();
  });

  it('takes over a lock left by a process that is gone', async () => {
    const dir = tempDataDir();
    fs.writeFileSync(path.join(dir, 'serve.lock'), '999999999\n');
    const running = await startController(testConfig(dir, { port: 0, bind: '127.0.0.1', db: await testDatabase() }));
    expect(fs.readFileSync(path.join(dir, 'serve.lock'), 'utf8').trim()).toBe(String(process.pid));
    await running.close();
  });
});
