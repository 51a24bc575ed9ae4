/**
 * A real S3 server for tests: Ceph's gateway (radosgw), started on loopback by `system/rgw.mjs` once a run
 * (it enforces multipart listing and conditional writes, which s3rver does not), and a proxy in front
 * of it that can answer 503 SlowDown, reset connections or refuse (AccessDenied) chosen requests,
 * and counts what it forwards.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import { afterAll, inject } from 'vitest';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';

// The SDK warns that its 2027 releases need Node 22 (docs/buckets.md says so); not in test output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

export interface S3Server {
  endpoint: string;
  /** What a costsync process needs to reach it (through `endpoint`, or a proxy's). */
  env(endpoint?: string): Record<string, string>;
  client: S3Client;
  createBucket(name: string): Promise<void>;
  /** Every key under `prefix`. */
  keys(bucket: string, prefix?: string): Promise<string[]>;
  /** Incomplete multipart uploads under `prefix`. */
  incompleteUploads(bucket: string, prefix?: string): Promise<string[]>;
  /** Downloads every object under `prefix` into `dir` (keys relative to the prefix). */
  download(bucket: string, prefix: string, dir: string): Promise<string[]>;
  stop(): void;
}

/** The run's radosgw for this test file: its client is let go when the file's tests are done. */
export function useRgw(): S3Server {
  const s3 = startRgw();
  afterAll(() => s3.stop());
  return s3;
}

/**
 * The run's radosgw where a global setup started one (`startRgw`), or null: in a project without that
 * setup (its `inject('rgw')` is undefined) or outside vitest's workers (where `inject` throws).
 */
export function startRgwIfAny(): S3Server | null {
  let info: unknown;
  try {
    info = inject('rgw');
  } catch {
    return null;
  }
  return info === undefined ? null : startRgw();
}

/** The radosgw the run's global setup started (test/support/global-setup.ts): one for every file, buckets of their own. */
export function startRgw(): S3Server {
  const info = inject('rgw');
  const endpoint = info.endpoint;
  const credentials = { accessKeyId: info.accessKeyId, secretAccessKey: info.secretAccessKey };
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials,
    requestChecksumCalculation: 'WHEN_REQUIRED',
  });
  const keys = async (bucket: string, prefix = '') => {
    const found: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
      found.push(...(page.Contents ?? []).map((c) => c.Key!));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found.sort();
  };
  return {
    endpoint,
    env: (via = endpoint) => ({
      AWS_ENDPOINT_URL_S3: via,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
    }),
    client,
    createBucket: async (name) => {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    keys,
    incompleteUploads: async (bucket, prefix = '') => {
      const page = await client.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: prefix }));
      return (page.Uploads ?? []).map((u) => u.Key!);
    },
    download: async (bucket, prefix, target) => {
      const got = await keys(bucket, prefix);
      for (const key of got) {
        const file = join(target, key.slice(prefix.length));
        mkdirSync(dirname(file), { recursive: true });
        const body = await (await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray();
        writeFileSync(file, body);
      }
      return got.map((k) => k.slice(prefix.length));
    },
    // The server is the run's: only this file's client is let go.
    stop: () => {
      client.destroy();
    },
  };
}

/**
 * s3rver, in this process on port 0: a fake S3 that accepts `If-None-Match` and `If-Match` and
 * overwrites anyway (what the conditional-write probe must refuse).
 */
export async function startS3rver(
  dir: string,
  buckets: string[],
): Promise<{ endpoint: string; env: Record<string, string>; close(): Promise<void> }> {
  const { default: S3rver } = await import('s3rver');
  const server = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: dir,
    configureBuckets: buckets.map((name) => ({ name, configs: [] })),
  });
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  return {
    endpoint,
    env: {
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
      AWS_EC2_METADATA_DISABLED: 'true',
    },
    close: () => server.close(),
  };
}

/**
 * What the proxy does with one request: forward it, or answer it with a fault. `lost`: forwarded and
 * applied, then the connection reset instead of the answer (the SDK sends the request again).
 */
export type Fault = 'slowdown' | 'reset' | 'deny' | 'lost' | null;

export interface S3Request {
  method: string;
  path: string;
  query: string;
  /** A write with `If-None-Match` or `If-Match`. */
  conditional: boolean;
}

/**
 * A proxy in front of `target`: `decide` picks a fault per request (counted from 1); `log` keeps
 * every request it saw; `dropHeaders` are removed before forwarding (a server that ignores them);
 * `shiftDateMs` moves the `Date` of every answer, as if that much more time had passed on the bucket's
 * clock since its objects were written.
 */
export async function faultProxy(
  target: string,
  decide: (req: S3Request, n: number) => Fault = () => null,
  options: { dropHeaders?: string[]; shiftDateMs?: number } = {},
) {
  const log: S3Request[] = [];
  let policy = decide;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://proxy');
    const entry = {
      method: req.method ?? 'GET',
      path: decodeURIComponent(url.pathname),
      query: url.search,
      conditional: req.headers['if-none-match'] !== undefined || req.headers['if-match'] !== undefined,
    };
    log.push(entry);
    const fault = policy(entry, log.length);
    const answer = (status: number, code: string) => {
      req.resume();
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${code} (test proxy)</Message></Error>`);
    };
    if (fault === 'slowdown') return answer(503, 'SlowDown');
    if (fault === 'deny') return answer(403, 'AccessDenied');
    if (fault === 'reset') {
      req.socket.destroy();
      return undefined;
    }
    const headers = { ...req.headers };
    for (const name of options.dropHeaders ?? []) delete headers[name];
    const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers }, (up) => {
      if (fault === 'lost') {
        // The server has answered, so the write is applied: the client never hears of it.
        up.resume();
        req.socket.destroy();
        return;
      }
      const answered = { ...up.headers };
      if (options.shiftDateMs !== undefined && typeof answered.date === 'string')
        answered.date = new Date(Date.parse(answered.date) + options.shiftDateMs).toUTCString();
      res.writeHead(up.statusCode ?? 502, answered);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
    return undefined;
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    log,
    setPolicy(next: (req: S3Request, n: number) => Fault) {
      policy = next;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * A `faultProxy` that loses the answer of the conditional writes `lose` picks (counted from 1 since
 * the last `reset()`): the write is applied, the connection reset instead of the answer.
 */
export async function lostAnswerProxy(target: string) {
  let lose: (n: number) => boolean = () => false;
  let conditional = 0;
  let lost = 0;
  const proxy = await faultProxy(target, (req): Fault => {
    if (!req.conditional) return null;
    conditional += 1;
    if (!lose(conditional)) return null;
    lost += 1;
    return 'lost';
  });
  return {
    endpoint: proxy.endpoint,
    /** Which conditional writes lose their answer from now on, counted from 1 again. */
    lose(which: (n: number) => boolean) {
      lose = which;
      conditional = 0;
    },
    /** Conditional writes since the last `lose`, and answers lost in all. */
    counts: () => ({ conditional, lost }),
    close: () => proxy.close(),
  };
}
