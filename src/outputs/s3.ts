/**
 * An S3-compatible bucket, through the AWS SDK v3: S3 itself, R2, GCS's XML API, MinIO, Ceph.
 * Credentials and region come from the SDK's default chain (environment, shared config and profiles,
 * SSO, web identity, container and instance metadata); `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL`
 * selects another server, addressed path-style. Retries (503 SlowDown, 5xx, resets) are the SDK's own
 * standard strategy, bounded. Every failure becomes an `S3Error` naming the bucket, key and the IAM
 * action that was refused, never a credential.
 */
import { randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import pRetry from 'p-retry';
import { CostsyncError, ExitCode, throwIfStopped, type ErrorCode } from '../errors.js';
import { awsSettingsOf, bareEtag, s3Url } from './s3-url.js';

/** The IAM actions costsync needs, named in errors so a person knows what to grant. */
export type S3Action =
  's3:PutObject' | 's3:GetObject' | 's3:DeleteObject' | 's3:ListBucket' | 's3:AbortMultipartUpload' | 's3:ListBucketMultipartUploads';

/** S3's smallest part (all but the last). */
export const MIN_PART_SIZE = 5 * 1024 * 1024;
export const DEFAULT_PART_SIZE = 8 * 1024 * 1024;

/**
 * Parts of a multipart upload: 8 MiB each (COSTSYNC_S3_PART_SIZE, in bytes, at least 5 MiB), 4 at a
 * time (32 MiB of buffers at most). Pure.
 */
export function partSize(env: NodeJS.ProcessEnv = process.env): number {
  const asked = Number(env.COSTSYNC_S3_PART_SIZE);
  return Number.isInteger(asked) && asked > 0 ? Math.max(MIN_PART_SIZE, asked) : DEFAULT_PART_SIZE;
}
export const PARTS_IN_PARALLEL = 4;
/** The user metadata naming the `putFile` call that wrote an object (the SDK sends it as `x-amz-meta-costsync-write`). */
const WRITE_ID = 'costsync-write';
/** Whole uploads tried again after the SDK's own retries gave up (a reset during CompleteMultipartUpload, say). */
const UPLOAD_ATTEMPTS = 3;

/** A client from the SDK's default chain, for another endpoint when `AWS_ENDPOINT_URL_S3`/`AWS_ENDPOINT_URL` say so. */
export function createS3Client(env: NodeJS.ProcessEnv = process.env, overrides: S3ClientConfig = {}): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL || undefined;
  // The SDK warns on stderr (not in costsync's log format) that later releases need Node 22; docs/buckets.md says so.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  return new S3Client({
    ...awsSettingsOf(env),
    ...(endpoint !== undefined && { endpoint, forcePathStyle: true }),
    maxAttempts: 5,
    // Streamed bodies with a trailing checksum are refused (411) by some S3-compatible gateways (Ceph's):
    // checksums only where the operation requires one.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...overrides,
  });
}

/** Any failure of a bucket operation: which action, on which object, and the server's answer. */
export class S3Error extends CostsyncError {
  readonly statusCode: number | undefined;
  readonly action: S3Action;
  readonly bucket: string;
  readonly key: string;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      action: S3Action;
      bucket: string;
      key: string;
      statusCode?: number | undefined;
      hint: string;
      exitCode: ExitCode;
      cause: unknown;
    },
  ) {
    super(code, message, options);
    this.name = 'S3Error';
    this.statusCode = options.statusCode;
    this.action = options.action;
    this.bucket = options.bucket;
    this.key = options.key;
  }
}

/** What the SDK threw, as an `S3Error` that names the action, bucket and key, and what to do. Pure. */
export function toS3Error(error: unknown, op: { action: S3Action; bucket: string; key: string }): S3Error {
  if (error instanceof S3Error) return error;
  const e = error as { name?: string; message?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  const name = e.Code ?? e.name ?? 'Error';
  const status = e.$metadata?.httpStatusCode;
  const where = s3Url(op.bucket, op.key);
  const base = { ...op, statusCode: status, cause: error };
  if (name === 'CredentialsProviderError' || /could not load credentials/i.test(e.message ?? '')) {
    return new S3Error('CS_ERR_S3_CREDENTIALS', `No AWS credentials for ${op.action} on ${where}.`, {
      ...base,
      exitCode: ExitCode.AUTH,
      hint: 'Give credentials the AWS way: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, or a role (IRSA, Pod Identity, ECS task, instance profile).',
    });
  }
  if (/region is missing/i.test(e.message ?? '')) {
    return new S3Error('CS_ERR_S3_REGION', `No AWS region for ${where}.`, {
      ...base,
      exitCode: ExitCode.USAGE,
      hint: 'Set AWS_REGION (or a region in the AWS profile); for another S3-compatible server, any region it accepts, such as us-east-1.',
    });
  }
  if (
    name === 'AccessDenied' ||
    name === 'Forbidden' ||
    name === 'InvalidAccessKeyId' ||
    name === 'SignatureDoesNotMatch' ||
    status === 403
  ) {
    return new S3Error('CS_ERR_S3_ACCESS_DENIED', `Access denied: ${op.action} on ${where} (${name}).`, {
      ...base,
      exitCode: ExitCode.AUTH,
      hint: `Grant ${op.action} on ${op.action === 's3:ListBucket' || op.action === 's3:ListBucketMultipartUploads' ? `arn:aws:s3:::${op.bucket}` : `arn:aws:s3:::${op.bucket}/${op.key.replace(/[^/]*$/, '')}*`} to the credentials costsync runs with, or check the key pair.`,
    });
  }
  if (status === 412 || name === 'PreconditionFailed') {
    return new S3Error('CS_ERR_S3_PRECONDITION', `${where} changed since this run read it (${op.action} refused: precondition failed).`, {
      ...base,
      exitCode: ExitCode.LOCKED,
      hint: 'Another run wrote it meanwhile: nothing was overwritten.',
    });
  }
  if (name === 'NoSuchBucket') {
    return new S3Error('CS_ERR_S3_NO_BUCKET', `The bucket ${op.bucket} does not exist (${op.action} on ${where}).`, {
      ...base,
      exitCode: ExitCode.USAGE,
      hint: 'Create the bucket, or correct the s3:// URL (and AWS_ENDPOINT_URL_S3 for another server).',
    });
  }
  return new S3Error(
    'CS_ERR_S3',
    `${op.action} on ${where} failed: ${name}${status !== undefined ? ` (HTTP ${status})` : ''}: ${(e.message ?? '').split('\n')[0]}`,
    {
      ...base,
      exitCode: ExitCode.FAILED,
      hint: 'The SDK retried it; check the endpoint and the network. Nothing committed is lost: the next run tries again.',
    },
  );
}

/**
 * Whether the server honours conditional writes, tried on a probe object at `key` (created, then
 * removed): a second create with `If-None-Match: *` must be refused, and so must `If-Match` on a wrong
 * ETag. Some S3-compatible servers accept the headers and overwrite anyway. Each write's body is its
 * own, so a create whose answer was lost and whose retry met it is settled as this probe's (`putIf`),
 * never taken for a server that ignores the condition. Returns what failed, or null.
 */
export async function conditionalWritesIgnored(bucket: Bucket, key: string): Promise<string | null> {
  await bucket.delete(key);
  const body = (n: number) => JSON.stringify({ probe: n, write: randomUUID() });
  try {
    if ((await bucket.putIf(key, body(1), { ifNoneMatch: '*' })) === null)
      return 'a create with If-None-Match: * of an absent key was refused';
    if ((await bucket.putIf(key, body(2), { ifNoneMatch: '*' })) !== null)
      return 'a second create with If-None-Match: * overwrote the object';
    if ((await bucket.putIf(key, body(3), { ifMatch: '"00000000000000000000000000000000"' })) !== null)
      return 'a write with If-Match on a wrong ETag overwrote the object';
    return null;
  } finally {
    await bucket.delete(key);
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404;
}

/** Errors that another attempt cannot fix. */
function isPermanent(error: S3Error): boolean {
  return error.code !== ('CS_ERR_S3' satisfies ErrorCode);
}

/**
 * A bucket with the storage settings an Iceberg REST catalog vended for a table (`s3.access-key-id`,
 * `s3.secret-access-key`, `s3.session-token`, `s3.endpoint`, `s3.region`, `s3.path-style-access`);
 * what it does not say comes from the environment as for any bucket.
 */
export function openVendedBucket(name: string, config: Record<string, string>, env: NodeJS.ProcessEnv = process.env): Bucket {
  const endpoint = config['s3.endpoint'];
  const region = config['s3.region'] ?? config['client.region'];
  const client = createS3Client(env, {
    ...(endpoint !== undefined && { endpoint }),
    ...((endpoint !== undefined || config['s3.path-style-access'] === 'true') && { forcePathStyle: true }),
    ...(region !== undefined && { region }),
    credentials: {
      accessKeyId: config['s3.access-key-id']!,
      secretAccessKey: config['s3.secret-access-key']!,
      ...(config['s3.session-token'] !== undefined && { sessionToken: config['s3.session-token'] }),
    },
  });
  return new Bucket(client, name);
}

/** A bucket with a client from the default chain (`env`'s endpoint, region and keys first). */
export function openBucket(name: string, env: NodeJS.ProcessEnv = process.env): Bucket {
  return new Bucket(createS3Client(env), name);
}

/**
 * `client` with every request it sends cut once `signal` aborts: lib-storage's `Upload.abort()` only
 * stops waiting, and leaves the part or PUT in flight running (and the process alive) until it ends.
 */
function cutBy(client: S3Client, signal: AbortSignal): S3Client {
  return new Proxy(client, {
    get(target, property, receiver) {
      if (property !== 'send') return Reflect.get(target, property, receiver) as unknown;
      return (command: Parameters<S3Client['send']>[0], options?: { abortSignal?: AbortSignal }) =>
        target.send(command, { ...options, abortSignal: signal });
    },
  });
}

/** One bucket: the few operations costsync uses, each turning failures into an `S3Error`. */
export class Bucket {
  constructor(
    readonly client: S3Client,
    readonly name: string,
  ) {}

  private async call<T>(action: S3Action, key: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (error) {
      throw toS3Error(error, { action, bucket: this.name, key });
    }
  }

  /**
   * Uploads a local file as one complete object at `key`: a single PUT when it fits one part, else a
   * multipart upload (parts in parallel) that is aborted when it fails. Readers see the old object or
   * the new one, never a part. Returns the object's ETag (read back when the server gives none).
   *
   * The object carries an id of this call (`x-amz-meta-costsync-write`): an attempt that fails (its
   * answer lost and the retry refused by the condition the first try met, say) is settled by reading
   * it back, as `putIf` does, without downloading the file.
   */
  async putFile(
    key: string,
    file: string,
    conditions: { ifMatch?: string; ifNoneMatch?: string } = {},
    signal?: AbortSignal,
  ): Promise<string> {
    const writeId = randomUUID();
    const what = `the upload of ${s3Url(this.name, key)}`;
    try {
      return await this.putFileOnce(key, file, conditions, writeId, signal);
    } catch (error) {
      if (signal?.aborted !== true) throw error;
      // Cut by the run's stop: its multipart upload, if one was begun, is aborted now rather than left to the next run.
      const uploads = await this.incompleteUploads(key).catch(() => []);
      for (const u of uploads.filter((u) => u.key === key)) await this.abortUpload(u.key, u.uploadId).catch(() => undefined);
      throwIfStopped(signal, what);
      throw error;
    }
  }

  private async putFileOnce(
    key: string,
    file: string,
    conditions: { ifMatch?: string; ifNoneMatch?: string },
    writeId: string,
    signal: AbortSignal | undefined,
  ): Promise<string> {
    return pRetry(
      async () => {
        throwIfStopped(signal, `the upload of ${s3Url(this.name, key)}`);
        let etag: string;
        try {
          etag = await this.call('s3:PutObject', key, async () => {
            const upload = new Upload({
              client: signal === undefined ? this.client : cutBy(this.client, signal),
              partSize: partSize(),
              queueSize: PARTS_IN_PARALLEL,
              leavePartsOnError: false,
              params: {
                Bucket: this.name,
                Key: key,
                Body: createReadStream(file),
                ContentLength: statSync(file).size,
                Metadata: { [WRITE_ID]: writeId },
                ...(conditions.ifMatch !== undefined && { IfMatch: conditions.ifMatch }),
                ...(conditions.ifNoneMatch !== undefined && { IfNoneMatch: conditions.ifNoneMatch }),
              },
            });
            return (await upload.done()).ETag ?? '';
          });
        } catch (error) {
          if (signal?.aborted === true) throw error;
          // A read back that fails too settles nothing: the write's own error is the one to report.
          const now = await this.head(key).catch(() => null);
          if (now !== null && now.writeId === writeId) return now.etag;
          throw error;
        }
        // Some servers (Ceph) answer CompleteMultipartUpload with an empty ETag.
        return etag !== '' ? etag : ((await this.head(key))?.etag ?? '');
      },
      {
        retries: UPLOAD_ATTEMPTS - 1,
        minTimeout: 200,
        shouldRetry: (error) => signal?.aborted !== true && !(error instanceof S3Error && isPermanent(error)),
      },
    );
  }

  /**
   * Writes `text` at `key` only when the condition holds (`If-None-Match: *`: the key is absent;
   * `If-Match`: its ETag is still this one). Returns the new ETag, or null when the server refused
   * (412 Precondition Failed, or 409 when another conditional write raced this one).
   *
   * The SDK sends a write again when its answer is lost (a reset, a timeout, a 5xx); if the first try
   * was applied, the retry meets it and is refused. So a refusal, or a failure, is settled by reading
   * the object back: when it holds `text` (each caller's is unique: a run id, a snapshot id, a time),
   * the write is this one's. A read that fails leaves it unknown, and throws: never taken for a refusal.
   */
  async putIf(key: string, text: string, condition: { ifNoneMatch: '*' } | { ifMatch: string }): Promise<string | null> {
    try {
      const out = await this.client.send(
        new PutObjectCommand({
          Bucket: this.name,
          Key: key,
          Body: text,
          ContentType: 'application/json',
          ...('ifNoneMatch' in condition ? { IfNoneMatch: '*' } : { IfMatch: bareEtag(condition.ifMatch) }),
        }),
      );
      return out.ETag ?? (await this.head(key))?.etag ?? '';
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const now = await this.getText(key);
      if (now !== null && now.text === text) return now.etag;
      if (status === 412 || status === 409) return null;
      throw toS3Error(error, { action: 's3:PutObject', bucket: this.name, key });
    }
  }

  /**
   * The object's text and ETag, and its age on the server's own clock (the response's `Date` less the
   * object's `Last-Modified`), so staleness never compares two machines' clocks; null age when the
   * server sends no `Date`.
   */
  async getText(key: string): Promise<{ text: string; etag: string; ageMs: number | null } | null> {
    try {
      const command = new GetObjectCommand({ Bucket: this.name, Key: key });
      let serverDate: string | undefined;
      command.middlewareStack.add(
        (next) => async (args) => {
          const result = await next(args);
          serverDate = (result.response as { headers?: Record<string, string> }).headers?.date;
          return result;
        },
        { step: 'deserialize', name: 'costsyncServerDate' },
      );
      const out = await this.client.send(command);
      const now = serverDate === undefined ? NaN : Date.parse(serverDate);
      const modified = out.LastModified?.getTime() ?? NaN;
      return {
        text: await out.Body!.transformToString(),
        etag: out.ETag ?? '',
        ageMs: Number.isFinite(now) && Number.isFinite(modified) ? Math.max(0, now - modified) : null,
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw toS3Error(error, { action: 's3:GetObject', bucket: this.name, key });
    }
  }

  /** The object's bytes, or null when there is none. */
  async getBytes(key: string): Promise<Buffer | null> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.name, Key: key }));
      return Buffer.from(await out.Body!.transformToByteArray());
    } catch (error) {
      if (isNotFound(error)) return null;
      throw toS3Error(error, { action: 's3:GetObject', bucket: this.name, key });
    }
  }

  async putBytes(key: string, body: Uint8Array, contentType = 'application/octet-stream'): Promise<void> {
    await this.call('s3:PutObject', key, () =>
      this.client.send(new PutObjectCommand({ Bucket: this.name, Key: key, Body: body, ContentType: contentType })),
    );
  }

  urlOf(key: string): string {
    return s3Url(this.name, key);
  }

  async putText(key: string, text: string, contentType = 'application/json'): Promise<void> {
    await this.call('s3:PutObject', key, () =>
      this.client.send(new PutObjectCommand({ Bucket: this.name, Key: key, Body: text, ContentType: contentType })),
    );
  }

  async delete(key: string): Promise<void> {
    await this.call('s3:DeleteObject', key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.name, Key: key })));
  }

  /** The object's ETag and size (and the id of the `putFile` that wrote it), or null when there is none. */
  async head(key: string): Promise<{ etag: string; size: number; writeId: string | undefined } | null> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.name, Key: key }));
      return { etag: out.ETag ?? '', size: out.ContentLength ?? 0, writeId: out.Metadata?.[WRITE_ID] };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw toS3Error(error, { action: 's3:GetObject', bucket: this.name, key });
    }
  }

  /** Downloads `key` to `file` (through a temporary file beside it, renamed once complete); returns its ETag. */
  async download(key: string, file: string): Promise<string> {
    const tmp = `${file}.download-${process.pid}`;
    try {
      return await this.call('s3:GetObject', key, async () => {
        const out = await this.client.send(new GetObjectCommand({ Bucket: this.name, Key: key }));
        await pipeline(out.Body as Readable, createWriteStream(tmp));
        await rename(tmp, file);
        return out.ETag ?? '';
      });
    } finally {
      await rm(tmp, { force: true });
    }
  }

  /** Every key under `prefix`. */
  async list(prefix: string): Promise<{ key: string; size: number }[]> {
    const keys: { key: string; size: number }[] = [];
    let token: string | undefined;
    do {
      const out = await this.call('s3:ListBucket', prefix, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.name, Prefix: prefix, ContinuationToken: token })),
      );
      for (const o of out.Contents ?? []) keys.push({ key: o.Key!, size: o.Size ?? 0 });
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token !== undefined);
    return keys;
  }

  /** Incomplete multipart uploads under `prefix` (a crashed writer's: they cost storage and never show in listings). */
  async incompleteUploads(prefix: string): Promise<{ key: string; uploadId: string }[]> {
    const found: { key: string; uploadId: string }[] = [];
    let keyMarker: string | undefined;
    let idMarker: string | undefined;
    for (;;) {
      let out;
      try {
        out = await this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.name, Prefix: prefix, KeyMarker: keyMarker, UploadIdMarker: idMarker }),
        );
      } catch (error) {
        // A server that cannot list uploads (s3rver, some gateways) has none costsync could abort.
        if ((error as { name?: string }).name === 'NotImplemented') return found;
        throw toS3Error(error, { action: 's3:ListBucketMultipartUploads', bucket: this.name, key: prefix });
      }
      for (const u of out.Uploads ?? []) found.push({ key: u.Key!, uploadId: u.UploadId! });
      if (!out.IsTruncated) return found;
      keyMarker = out.NextKeyMarker;
      idMarker = out.NextUploadIdMarker;
    }
  }

  async abortUpload(key: string, uploadId: string): Promise<void> {
    await this.call('s3:AbortMultipartUpload', key, async () => {
      try {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.name, Key: key, UploadId: uploadId }));
      } catch (error) {
        // Already completed or aborted (by another attempt): nothing left to abort.
        if ((error as { name?: string }).name !== 'NoSuchUpload') throw error;
      }
    });
  }
}
