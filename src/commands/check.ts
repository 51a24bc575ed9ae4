/** `costsync check`: tries the key on each endpoint with the smallest request, and says what works. */
import { createApiClient } from '../api/client.js';
import { createRequestLimiter } from '../api/resilience.js';
import { ENDPOINT_SCOPES } from '../api/types.js';
import { utcDate } from '../dates.js';
import { ApiError, CostsyncError, ExitCode, describeError } from '../errors.js';
import { resolve } from 'node:path';
import { probeCatalog } from '../outputs/iceberg-catalog.js';
import { catalogSecrets } from '../iceberg/rest-auth.js';
import { settingOptions } from '../settings.js';
import type { Argv } from 'yargs';
import { formatTable } from '../table.js';
import { loadConfig, makeLogger, oneSource, processIo, warnShortSecrets, type CommandIo } from './common.js';

/** The API's refusals of a key as a whole, whatever the endpoint: after one, the other probes would only repeat it. */
const KEY_REFUSALS: readonly string[] = ['UNAUTHORIZED', 'PLAN_RESTRICTED'];

/** A connection id no workspace has: the ingest probe is refused before anything is stored. */
export const PROBE_CONNECTION = 'costsync-check-probe';

export interface CheckResult {
  endpoint: string;
  scope: string;
  ok: boolean;
  result: string;
}

/** `check` takes the connection's settings and a catalog's (`--catalog`: probed too). */
export function checkOptions(yargs: Argv): Argv {
  return settingOptions(yargs, ['connection', 'catalog']);
}

export async function runCheckCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  const config = oneSource(loadConfig(args, io), 'check');
  const secrets = [config.apiKey, ...(config.catalog === null ? [] : catalogSecrets(config.catalog.env))];
  warnShortSecrets(config, makeLogger(config, io));
  const limiter = createRequestLimiter({ requestsPerMinute: config.rateLimit });
  const client = createApiClient({ baseUrl: config.baseUrl, apiKey: config.apiKey, limiter, retry: { retries: 2 } });
  const today = utcDate(io.now());
  const probes: [string, string, () => Promise<unknown>][] = [
    ['GET line-items', ENDPOINT_SCOPES.lineItems, () => client.lineItems({ startDate: today, endDate: today, limit: 1 })],
    ['GET rollups/daily', ENDPOINT_SCOPES.rollups, () => client.rollups({ startDate: today, endDate: today, groupBy: 'provider' })],
    ['GET anomalies', ENDPOINT_SCOPES.anomalies, () => client.anomalies({ limit: 1 })],
    // An empty batch for a connection that does not exist: a key with usage:write gets 400, without it 403.
    ['POST ingest/focus', ENDPOINT_SCOPES.ingest, () => client.ingestFocus(PROBE_CONNECTION, { rows: [] })],
  ];
  const results: CheckResult[] = [];
  let refused = false;
  let failed = false;
  /** A refusal of the key itself (unknown, revoked or expired; a plan without API access): every endpoint would say the same. */
  let keyRefused: string | null = null;
  try {
    for (const [endpoint, scope, probe] of probes) {
      if (keyRefused !== null) {
        results.push({ endpoint, scope, ok: false, result: `not tried: the key was refused (${keyRefused})` });
        continue;
      }
      try {
        await probe();
        results.push({ endpoint, scope, ok: true, result: 'ok' });
      } catch (error) {
        const api = error instanceof ApiError ? error : null;
        if (endpoint.startsWith('POST') && api && (api.statusCode === 400 || api.apiCode === 'FORBIDDEN')) {
          results.push({
            endpoint,
            scope,
            ok: true,
            result: api.apiCode === 'FORBIDDEN' ? 'ok (key bound to one connection)' : 'ok (probe refused as expected; nothing stored)',
          });
          continue;
        }
        const code = api?.apiCode ?? api?.code ?? 'ERROR';
        // Sync needs the read scopes; a key without usage:write is reported but not a failure.
        if (endpoint.startsWith('GET')) {
          if (api?.exitCode === ExitCode.AUTH) refused = true;
          else failed = true;
        }
        results.push({ endpoint, scope, ok: false, result: `${code}: ${describeError(error, secrets).split('\n')[0]}` });
        if (api !== null && KEY_REFUSALS.includes(api.apiCode ?? '')) keyRefused = api.apiCode!;
      }
    }
  } finally {
    await client.close();
  }
  const plan =
    keyRefused === 'UNAUTHORIZED'
      ? 'the key was refused (UNAUTHORIZED): unknown, revoked or expired'
      : results.some((r) => r.result.startsWith('PLAN_RESTRICTED'))
        ? 'no API access (needs Business or above)'
        : results.some((r) => r.ok)
          ? 'API access'
          : 'unknown';
  // With --catalog: the catalog too (config and credentials, namespace, a staged create, a write where tables go).
  const catalog =
    config.catalog === null
      ? null
      : await probeCatalog(config.catalog, {
          env: config.catalog.env,
          awsEnv: io.env,
          clock: { now: io.now, sleep: async () => undefined },
          logger: { warn: (m) => io.stderr(`warning: ${m}\n`), addSecret: (s) => secrets.push(s) },
          out: config.out,
          scratchRoot: resolve(config.stateDir, 'lake-scratch'),
          describeError: (e) => describeError(e, secrets),
        });
  for (const p of catalog ?? []) {
    if (p.ok) continue;
    if (p.error instanceof CostsyncError && p.error.exitCode === ExitCode.AUTH) refused = true;
    else failed = true;
  }
  const catalogRows = (catalog ?? []).map(({ step, ok, result }) => ({ step, ok, result }));
  if (config.logFormat === 'json') {
    io.stdout(
      `${JSON.stringify({ baseUrl: config.baseUrl, plan, results, ...(config.catalog !== null && { catalog: { url: config.catalog.url, probes: catalogRows } }) })}\n`,
    );
  } else {
    io.stdout(`${config.baseUrl}: ${plan}\n${formatTable(results as unknown as Record<string, unknown>[])}\n`);
    if (config.catalog !== null) io.stdout(`\nIceberg catalog ${config.catalog.url}\n${formatTable(catalogRows)}\n`);
  }
  return refused ? ExitCode.AUTH : failed ? ExitCode.FAILED : ExitCode.OK;
}
