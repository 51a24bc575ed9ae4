/**
 * Where a derived output is written: a local directory or a bucket prefix. The lake and the manifests
 * write through this small interface, so they never branch on the scheme. Both put whole files at
 * their final keys (a rename on disk; one complete object, multipart when large, in a bucket), so a
 * reader sees the old file or the new one, never a part.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, rmdirSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { createFileExclusive, namesIn, writeFileAtomic } from '../durable-file.js';
import type { Bucket } from './s3.js';
import { isS3Url, loadBucket, parseS3Url, s3Url } from './s3-url.js';
import { failpoint } from '../failpoints.js';
import { InternalError, throwIfStopped } from '../errors.js';

export interface OutputTarget {
  /** What messages name: a directory, or `s3://bucket/prefix`. */
  readonly url: string;
  readonly remote: boolean;
  /** An empty directory for files about to be put (on disk: inside the target, so a put is a rename). */
  scratch(name: string): string;
  /**
   * Puts `file` at `key`, whole, and removes `file`. Once `signal` is aborted nothing starts, and an
   * upload under way is cut and its multipart upload aborted (CS_ERR_ABORTED): the caller removes `file`.
   */
  putFile(key: string, file: string, signal?: AbortSignal): Promise<void>;
  putText(key: string, text: string): Promise<void>;
  /** Removes `key` (on disk, also its directory once empty). */
  remove(key: string): Promise<void>;
  /** Every key under `prefix` (relative to the target). */
  list(prefix: string): Promise<string[]>;
  /**
   * Removes what a killed run left: scratch directories, and in a bucket the incomplete multipart
   * uploads of the keys `owned` says are this runner's (another shard's uploads in progress stay).
   */
  removeLeftovers(owned: (key: string) => boolean): Promise<number>;
  /** A quick check that writing can work, before any work is done (a clear error otherwise). */
  check(probeName: string): Promise<void>;
  /** The absolute location of `key` as table formats name files (`file:///…`, `s3://bucket/…`). */
  location(key: string): string;
  getText(key: string): Promise<string | null>;
  getBytes(key: string): Promise<Buffer | null>;
  putBytes(key: string, bytes: Buffer): Promise<void>;
  /** Creates `key` only when absent (a create on disk, `If-None-Match: *` in a bucket); false when it exists. */
  createText(key: string, text: string): Promise<boolean>;
}

const SCRATCH_PREFIX = '.tmp-';

/** `path` as a new, empty directory (what a killed run left there is removed). */
function emptyDir(path: string): string {
  rmSync(path, { recursive: true, force: true });
  mkdirSync(path, { recursive: true });
  return path;
}

/** A directory on disk. */
export function directoryTarget(dir: string): OutputTarget {
  const root = resolve(dir);
  return {
    url: root,
    remote: false,
    scratch: (name) => emptyDir(join(root, `${SCRATCH_PREFIX}${name}-${process.pid}`)),
    async putFile(key, file, signal) {
      throwIfStopped(signal, `the lake file ${key}`);
      const target = join(root, key);
      mkdirSync(dirname(target), { recursive: true });
      renameSync(file, target);
      failpoint('lake-put');
    },
    async putText(key, text) {
      mkdirSync(dirname(join(root, key)), { recursive: true });
      await writeFileAtomic(join(root, key), text, { mode: 0o644, syncDir: true });
    },
    async remove(key) {
      const target = join(root, key);
      rmSync(target, { force: true });
      try {
        rmdirSync(dirname(target));
      } catch {
        // Not empty, or gone: either is fine.
      }
    },
    async list(prefix) {
      const base = join(root, prefix.replace(/[^/]*$/, ''));
      if (!existsSync(base)) return [];
      return readdirSync(base, { recursive: true, withFileTypes: true })
        .filter((d) => d.isFile())
        .map((d) => relative(root, join(d.parentPath, d.name)).split(sep).join('/'))
        .filter((k) => k.startsWith(prefix));
    },
    async removeLeftovers() {
      let removed = 0;
      for (const name of namesIn(root)) {
        if (name.startsWith(SCRATCH_PREFIX) || (/^_costsync_(?:manifest|state)/.test(name) && name.endsWith('.tmp'))) {
          rmSync(join(root, name), { recursive: true, force: true });
          removed += 1;
        }
      }
      return removed;
    },
    async check() {
      mkdirSync(root, { recursive: true });
    },
    // Keys hold only safe characters (source names are [a-z0-9_-]); the root is URL-encoded.
    location: (key) => {
      const href = pathToFileURL(join(root, key)).href;
      return key.endsWith('/') && !href.endsWith('/') ? `${href}/` : href;
    },
    async getText(key) {
      return (await this.getBytes(key))?.toString('utf8') ?? null;
    },
    async getBytes(key) {
      try {
        return readFileSync(join(root, key));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    async putBytes(key, bytes) {
      mkdirSync(dirname(join(root, key)), { recursive: true });
      await writeFileAtomic(join(root, key), bytes, { mode: 0o644, syncDir: true });
    },
    async createText(key, text) {
      mkdirSync(dirname(join(root, key)), { recursive: true });
      return createFileExclusive(join(root, key), text);
    },
  };
}

/** A prefix in a bucket; files about to be put wait in `scratchRoot` (in the state directory). */
export function bucketTarget(url: string, scratchRoot: string, bucket?: Bucket, env: NodeJS.ProcessEnv = process.env): OutputTarget {
  const location = parseS3Url(url, '--out');
  const prefix = location.key === '' || location.key.endsWith('/') ? location.key : `${location.key}/`;
  let opened: Promise<Bucket> | undefined = bucket && Promise.resolve(bucket);
  const b = () => (opened ??= loadBucket(location.bucket, env));
  return {
    url: s3Url(location.bucket, prefix),
    remote: true,
    scratch: (name) => emptyDir(join(scratchRoot, `${name}-${process.pid}`)),
    async putFile(key, file, signal) {
      throwIfStopped(signal, `the lake object ${prefix + key}`);
      await (await b()).putFile(prefix + key, file, {}, signal);
      failpoint('lake-put');
      rmSync(file, { force: true });
    },
    putText: async (key, text) => (await b()).putText(prefix + key, text),
    remove: async (key) => (await b()).delete(prefix + key),
    async list(sub) {
      return (await (await b()).list(prefix + sub)).map((o) => o.key.slice(prefix.length));
    },
    async removeLeftovers(owned) {
      rmSync(scratchRoot, { recursive: true, force: true });
      let aborted = 0;
      const bucket = await b();
      for (const upload of await bucket.incompleteUploads(prefix)) {
        if (!owned(upload.key.slice(prefix.length))) continue;
        await bucket.abortUpload(upload.key, upload.uploadId);
        aborted += 1;
      }
      return aborted;
    },
    async check(probeName) {
      // Listing, writing and deleting a small object outside every table's prefix: refused at the
      // start rather than half way through a backfill.
      const bucket = await b();
      await bucket.list(`${prefix}_costsync`);
      const probe = `${prefix}_costsync_check-${probeName}`;
      await bucket.putText(probe, '{}');
      await bucket.delete(probe);
      await bucket.incompleteUploads(`${prefix}_costsync_check`);
    },
    location: (key) => s3Url(location.bucket, prefix + key),
    getText: async (key) => (await (await b()).getText(prefix + key))?.text ?? null,
    getBytes: async (key) => (await b()).getBytes(prefix + key),
    putBytes: async (key, bytes) => (await b()).putBytes(prefix + key, bytes),
    createText: async (key, text) => (await (await b()).putIf(prefix + key, text, { ifNoneMatch: '*' })) !== null,
  };
}

/** The target `--out` names (a bucket with `env`'s settings). */
export function outputTarget(out: string, scratchRoot: string, env: NodeJS.ProcessEnv = process.env): OutputTarget {
  return isS3Url(out) ? bucketTarget(out, scratchRoot, undefined, env) : directoryTarget(out);
}

/**
 * The lake of Iceberg tables a REST catalog places (`--catalog` without `--out`): each table's files go
 * where its location says, so this target only names the catalog and holds the scratch directories.
 */
export function catalogLakeTarget(url: string, scratchRoot: string): OutputTarget {
  const none = (): never => {
    throw new InternalError(`The lake of ${url} has no files of its own: a table's files go through its location.`);
  };
  return {
    url,
    remote: true,
    scratch: (name) => emptyDir(join(scratchRoot, `${name}-${process.pid}`)),
    putFile: none,
    putText: none,
    remove: none,
    list: async () => [],
    async removeLeftovers() {
      rmSync(scratchRoot, { recursive: true, force: true });
      return 0;
    },
    check: async () => undefined,
    location: none,
    getText: none,
    getBytes: none,
    putBytes: none,
    createText: none,
  };
}
