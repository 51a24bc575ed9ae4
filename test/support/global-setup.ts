/**
 * Before the tests that need them: the system programs they run, installed or named (test/system/tools.ts);
 * then Ceph's radosgw, started once for the whole run (test/system/rgw.mjs), for every test file that
 * needs a real S3 server: they `inject('rgw')` its endpoint and keys (see `test/support/s3.ts`), and each uses
 * buckets of its own. The unit tests' project has no global setup and needs none of this.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startRadosgw, type Radosgw } from '../system/rgw.mjs';
import { ToolsMissing, ensureTools } from '../system/tools.js';

export interface RgwInfo {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    rgw: RgwInfo;
  }
}

/**
 * Each project that runs sets up on its own (a run of `test/sync/sync-kill.test.ts` has two): they
 * share one gateway, kept on the process, stopped when the last is done.
 */
interface Shared {
  gateway: Promise<Radosgw>;
  dir: string;
  users: number;
}
const SHARED = Symbol.for('costsync.test.radosgw');
const processState = globalThis as { [SHARED]?: Shared };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  try {
    ensureTools();
  } catch (error) {
    if (!(error instanceof ToolsMissing)) throw error;
    // The list alone and a failed run, before any test: vitest would frame it as an unhandled error and
    // add that it found no test files.
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  let shared = processState[SHARED];
  if (!shared) {
    const dir = mkdtempSync(join(tmpdir(), 'costsync-rgw-'));
    shared = processState[SHARED] = { gateway: startRadosgw(dir), dir, users: 0 };
  }
  shared.users += 1;
  const { endpoint, accessKeyId, secretAccessKey } = await shared.gateway;
  project.provide('rgw', { endpoint, accessKeyId, secretAccessKey });
  return async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    delete processState[SHARED];
    await (await shared.gateway).stop();
    rmSync(shared.dir, { recursive: true, force: true });
  };
}
