// One PKI for the whole run, copied into each test's data dir: RSA-4096 key generation takes seconds
// and would otherwise dominate the suite. The copy goes through the same loadOrCreatePki code.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { loadOrCreatePki } from '../../src/model/pki/pki.js';

let dir = '';

export async function setup(project: TestProject) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ztc-pki-'));
  await loadOrCreatePki(dir, ['localhost']);
  project.provide('pkiTemplate', dir);
}

export async function teardown() {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

declare module 'vitest' {
  export interface ProvidedContext {
    pkiTemplate: string;
  }
}
