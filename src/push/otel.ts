/**
 * `costsync push-otel`: posts a JSON document to the OTel ingest endpoint as it is (the spec shows
 * no shape), with the client's auth and retries, and records the answer in `ingest_batches`. A file
 * the ledger says was answered is not sent again unless forced.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ApiClient } from '../api/client.js';
import { ConfigError } from '../errors.js';
import { pushKeys } from './push.js';
import type { Logger } from '../log.js';
import { newRunId } from '../run-id.js';
import { acquireLock, dbLockPath } from '../state/lock.js';
import type { Warehouse } from '../storage/duckdb.js';

export interface OtelPushResult {
  pushId: string;
  file: string;
  sent: boolean;
  /** The server's `data`, as returned; null when not sent. */
  response: unknown;
}

export async function runPushOtel(deps: {
  file: string;
  force: boolean;
  baseUrl: string;
  apiKey: string;
  source?: string;
  client: ApiClient;
  warehouse: Warehouse;
  logger: Logger;
  clock?: { now(): number };
}): Promise<OtelPushResult> {
  const { file, client, warehouse, logger } = deps;
  const clock = deps.clock ?? { now: () => Date.now() };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new ConfigError(
      `${file}: cannot read the file (${(cause as NodeJS.ErrnoException).code ?? 'error'}).`,
      'Check the path and its permissions.',
      cause,
    );
  }
  try {
    JSON.parse(text);
  } catch (cause) {
    throw new ConfigError(
      `${file}: not a JSON document (${(cause as Error).message}).`,
      'push-otel sends one JSON document (for example an OTLP/JSON export); fix the file.',
      cause,
    );
  }
  const pushId = newRunId(clock.now());
  const fileSha = createHash('sha256').update(text).digest('hex');
  const [pushKey, legacyKey] = pushKeys({ base: deps.baseUrl, fileSha, kind: 'otel' }, deps);
  const lock = acquireLock(dbLockPath(warehouse.path), `costsync push-otel (${pushId})`, new Date(clock.now()));
  try {
    const [done] = await warehouse.query<{ batches: number }>('push/ledger_resume', [pushKey, legacyKey]);
    if (done!.batches > 0 && !deps.force) {
      logger.info(`${file}: this document was sent before (see ingest_batches); not sending it again (use --force to send anyway)`);
      return { pushId, file, sent: false, response: null };
    }
    const response = await client.ingestOtel(text);
    await warehouse.transaction(() =>
      warehouse.run('push/ledger_record', [
        pushId,
        pushKey,
        'otel',
        null,
        file,
        fileSha,
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        null,
        JSON.stringify(response ?? null),
        new Date(clock.now()).toISOString(),
        deps.source ?? 'default',
        null,
        null,
      ]),
    );
    return { pushId, file, sent: true, response };
  } finally {
    lock.release();
  }
}
