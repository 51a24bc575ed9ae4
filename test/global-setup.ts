/**
 * Starts Ceph's radosgw once for the whole run (about 3 s), for every test file that needs a real S3
 * server: they `inject('rgw')` its endpoint and keys (see `test/s3.ts`), and each uses buckets of its own.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

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

const RGW = fileURLToPath(new URL('../../shared/s3/rgw.sh', import.meta.url));

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'costsync-rgw-'));
  const out = execFileSync('bash', [RGW, 'start', dir], { encoding: 'utf8' });
  const vars = Object.fromEntries([...out.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
  project.provide('rgw', {
    endpoint: vars.S3_ENDPOINT!,
    accessKeyId: vars.AWS_ACCESS_KEY_ID!,
    secretAccessKey: vars.AWS_SECRET_ACCESS_KEY!,
  });
  return () => {
    execFileSync('bash', [RGW, 'stop', dir]);
    rmSync(dir, { recursive: true, force: true });
  };
}
