/**
 * `s3://` URLs, apart from the SDK (which is loaded only when a bucket is used: it is slow to
 * load and takes much memory).
 */
import { ConfigError } from '../errors.js';

export interface S3Location {
  bucket: string;
  /** The object key (`--db`) or the prefix (`--out`), without a leading slash. */
  key: string;
}

export function isS3Url(value: string): boolean {
  return /^s3:\/\//i.test(value);
}

/** `s3://bucket/key` → bucket and key. Pure. */
export function parseS3Url(value: string, flag: string): S3Location {
  const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(value);
  if (!match || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(match[1]!)) {
    throw new ConfigError(
      `${flag} ${value} does not name a bucket.`,
      `Write it as s3://BUCKET/${flag === '--db' ? 'KEY.duckdb' : 'PREFIX'} (a bucket name of 3 to 63 lower-case letters, digits, dots and dashes).`,
    );
  }
  return { bucket: match[1]!, key: match[2]! };
}

/** The URL of `key` in `bucket`, for messages. Pure. */
export function s3Url(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/** Loads the SDK and opens `name` with `env`'s settings (once per caller that keeps the promise). */
export async function loadBucket(name: string, env: NodeJS.ProcessEnv = process.env): Promise<import('./s3.js').Bucket> {
  return (await import('./s3.js')).openBucket(name, env);
}

/**
 * The region and key pair `env` gives, where it is not the process's own: the SDK's default chain reads
 * only `process.env`, and a command run in-process (the tests) has an environment of its own. Reads
 * nothing but `env`, which it compares with `process.env` by identity.
 */
export function awsSettingsOf(env: NodeJS.ProcessEnv): {
  region?: string;
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
} {
  if (env === process.env) return {};
  const [accessKeyId, secretAccessKey, sessionToken] = [env.AWS_ACCESS_KEY_ID, env.AWS_SECRET_ACCESS_KEY, env.AWS_SESSION_TOKEN];
  return {
    ...(env.AWS_REGION && { region: env.AWS_REGION }),
    ...(accessKeyId && secretAccessKey && { credentials: { accessKeyId, secretAccessKey, ...(sessionToken && { sessionToken }) } }),
  };
}

/**
 * An ETag as `If-Match` takes it: without its quotes. Ceph's gateway (16.x) refuses a quoted ETag in
 * `If-Match` with 412 whatever the object; AWS documents the quoted form, and it and the other servers
 * tried accept both.
 */
export function bareEtag(etag: string): string {
  return etag.replace(/^"(.*)"$/, '$1');
}
