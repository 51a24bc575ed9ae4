/** `costsync verify`: prints every reconciliation difference; exits 1 when there is one, so a nightly job can gate on it. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode } from '../errors.js';
import { formatTable } from '../table.js';
import { recordedBaseUrl } from '../state/files.js';
import { nothingSyncedError, syncedRanges, unsyncedIn, unsyncedText, verifyFocus, verifyWarehouse } from '../verify.js';
import { addDays, utcDate } from '../dates.js';
import { choiceArg, dateArg, shellWord } from './args.js';
import { runReadCommand, warehouseOptions } from './read.js';
import { loadConfig, processIo, type CommandIo } from './common.js';
import type { SyncConfig } from '../config.js';
import { createApiClient } from '../api/client.js';
import { createRequestLimiter } from '../api/resilience.js';
import { check, envName, specOf } from '../settings.js';
import type { ReadOnlyWarehouse } from '../storage/duckdb.js';
import { verifyAgainstApi } from '../verify-api.js';

export function verifyOptions(yargs: Argv) {
  return warehouseOptions(yargs)
    .option('tolerance', { type: 'number', describe: 'Largest difference, in dollars, that is not reported [default 0.01]' })
    .option('from', { type: 'string', describe: 'First date to check (YYYY-MM-DD)' })
    .option('to', { type: 'string', describe: 'Last date to check (YYYY-MM-DD)' })
    .option('format', { type: 'string', describe: 'table or json [default table]' })
    .option('focus', {
      type: 'boolean',
      describe:
        'Check the FOCUS views instead: focus against the FOCUS 1.2 rules that apply, focus_1_3 and focus_1_4 against their versions',
    })
    .option('api', {
      type: 'boolean',
      describe:
        "Check the warehouse against the API's rollups instead (3 requests a source, over the dates synced; needs the key, rollups:read)",
    })
    .option('base-url', { type: 'string', describe: `With --api: ${specOf('base-url').describe} [env ${envName('base-url')}]` })
    .option('api-key-file', { type: 'string', describe: `With --api: ${specOf('api-key-file').describe}` })
    .option('source', { type: 'string', describe: `With --api: ${specOf('source').describe}` })
    .option('rate-limit', { type: 'number', describe: `With --api: ${specOf('rate-limit').describe} [default 60]` })
    .option('state-dir', {
      type: 'string',
      describe: `With --api and no --base-url: the state directory whose file of this --db records the API [default ./state] [env ${envName('state-dir')}]`,
    });
}

/**
 * The configuration of `verify --api`. Without a base URL (no --base-url, variable or config file), the API
 * this warehouse's state file records in --state-dir: the one its syncs read, said on stderr.
 */
function loadWithRecordedApi(args: Record<string, unknown>, io: CommandIo): SyncConfig {
  try {
    return loadConfig(args, io);
  } catch (error) {
    if (!(error instanceof ConfigError) || !error.message.startsWith('No base URL')) throw error;
  }
  const given = loadConfig(args, io, false);
  const recorded = recordedBaseUrl(given.stateDir, given.db);
  if (recorded === null)
    throw new ConfigError(
      `No base URL: verify --api does not know which API to ask, and ${given.stateDir} holds no state file of ${given.db} that records one.`,
      "Pass --base-url https://…, or --state-dir with the state directory the warehouse's syncs use (verify --api then asks the API it records).",
    );
  io.stderr(`verify --api: asking the API this warehouse's state records, ${recorded} (pass --base-url to ask another)\n`);
  return loadConfig({ ...args, 'base-url': recorded }, io);
}

/** `verify --api`: each source's warehouse rows against the API's rollups; exit 1 on a difference, 3 for the key, 2 for the URL. */
async function verifyApi(
  args: Record<string, unknown>,
  io: CommandIo,
  open: () => Promise<ReadOnlyWarehouse>,
  options: { tolerance: number; from: string | null; to: string | null; format: 'table' | 'json' },
): Promise<ExitCode> {
  // verify's --format is its output's, not the lake's.
  const config = loadWithRecordedApi({ ...args, format: undefined }, io);
  const sources = config.sources ?? [{ name: 'default', baseUrl: config.baseUrl, apiKey: config.apiKey, rateLimit: config.rateLimit }];
  const clients = sources.map((s) => ({
    name: s.name,
    client: createApiClient({
      baseUrl: s.baseUrl,
      apiKey: s.apiKey,
      limiter: createRequestLimiter({ requestsPerMinute: s.rateLimit }),
      retry: { retries: 2 },
    }),
  }));
  try {
    const named = config.sources !== undefined;
    // The flags this verify was given that name the API and the warehouse, so the printed sync reaches the same ones.
    const carried = CARRIED_FLAGS.filter((k) => typeof args[k] === 'string')
      .map((k) => ` --${k} ${shellWord(String(args[k]))}`)
      .join('');
    const warehouse = await open();
    // Only the sources verified (--source): another's synced dates say nothing of theirs.
    const asked = new Set(clients.map((c) => c.name));
    const ranges = (await syncedRanges(warehouse, options.from, options.to)).filter((r) => asked.has(r.source));
    // No synced date in the range (before, after or inside a hole of what is held): nothing is asked of
    // the API, and nothing is said to agree.
    const nothing = nothingSyncedError(ranges, options.from, options.to, 'verify --api');
    if (nothing !== null) throw nothing;
    const report = await verifyAgainstApi(warehouse, clients, {
      ...options,
      fixCommand: (source, from, to) => `costsync sync${carried}${named ? ` --source ${source}` : ''} --since ${from} --until ${to}`,
    });
    const notSynced = unsyncedIn(ranges, options.from, options.to);
    if (options.format === 'json') io.stdout(`${JSON.stringify({ ...report, notSynced }, null, 2)}\n`);
    else {
      const scope =
        report.sources
          .map((s) => `${s.source}: ${s.from === null ? 'nothing synced' : `${s.from}..${s.to}`}, ${s.requests} request(s)`)
          .join('; ') + unsyncedText(notSynced);
      io.stdout(
        report.differences.length === 0
          ? `The warehouse equals the API's rollups, within $${options.tolerance} (${scope}).\n`
          : `${formatTable(report.differences as unknown as Record<string, unknown>[])}\n\n${report.differences.length} difference(s) from the API above $${options.tolerance} (${scope}). To sync them again:\n${report.fixes.map((f) => `  ${f}`).join('\n')}\n`,
      );
    }
    return report.differences.length === 0 ? ExitCode.OK : ExitCode.FAILED;
  } finally {
    for (const c of clients) await c.client.close();
  }
}

const CARRIED_FLAGS = ['config', 'db', 'base-url', 'api-key-file'] as const;

export function runVerifyCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  return runReadCommand(args, io, async (open) => {
    const tolerance = args.tolerance === undefined ? 0.01 : check.dollars('--tolerance', args.tolerance);
    // A date after today has no costs to compare: a check over it would pass having checked nothing.
    const today = utcDate(io.now());
    const future = (name: 'from' | 'to', value: unknown) =>
      check.notFuture(
        `--${name}`,
        dateArg(name, value),
        today,
        'no costs exist for days that have not happened, so there is nothing to compare.',
        `Pass a date on or before ${today}, for example --from ${addDays(today, -29)} --to ${today}.`,
      );
    const from = args.from === undefined ? null : future('from', args.from);
    const to = args.to === undefined ? null : future('to', args.to);
    // A range the wrong way round would check nothing and say all is equal.
    if (from !== null && to !== null)
      check.notAfter('--from', from, to, `Pass a --from on or before --to, for example --from ${to} --to ${from}.`);
    const format = choiceArg('format', args.format ?? 'table', ['table', 'json'] as const);
    if (args.api === true) {
      if (args.focus === true) throw new ConfigError('--api and --focus check different things.', 'Run verify once with each.');
      return verifyApi(args, io, open, { tolerance, from, to, format });
    }
    if (args.focus === true) {
      const focus = await verifyFocus(await open(), { tolerance });
      if (format === 'json') io.stdout(`${JSON.stringify(focus, null, 2)}\n`);
      else {
        io.stdout(
          focus.violations.length === 0
            ? `No FOCUS violations (${focus.rows} rows checked in each of focus (FOCUS 1.2), focus_1_3 and focus_1_4).\n`
            : `${formatTable(focus.violations as unknown as Record<string, unknown>[])}\n\n${focus.violations.length} FOCUS rule(s) broken (${focus.rows} rows checked in each of focus, focus_1_3 and focus_1_4).\n`,
        );
      }
      return focus.violations.length === 0 ? ExitCode.OK : ExitCode.FAILED;
    }
    const warehouse = await open();
    const report = await verifyWarehouse(warehouse, { tolerance, from, to });
    const ranges = await syncedRanges(warehouse, from, to);
    // Nothing compared and nothing synced there: not "no differences".
    if (report.lineItemDates + report.rollupDates === 0) {
      const nothing = nothingSyncedError(ranges, from, to, 'verify');
      if (nothing !== null) throw nothing;
    }
    // Dates of the range never synced were not compared: said, so "no differences" is not read as covering them.
    const notSynced = unsyncedIn(ranges, from, to);
    if (format === 'json') {
      io.stdout(`${JSON.stringify({ ...report, notSynced }, null, 2)}\n`);
    } else {
      const scope = `${report.lineItemDates} date(s) of line items against rollups, ${report.rollupDates} date(s) of rollup totals${unsyncedText(notSynced)}`;
      io.stdout(
        report.differences.length === 0
          ? `No differences above $${tolerance} (${scope}).\n`
          : `${formatTable(report.differences as unknown as Record<string, unknown>[])}\n\n${report.differences.length} difference(s) above $${tolerance} (${scope}).\n`,
      );
    }
    return report.differences.length === 0 ? ExitCode.OK : ExitCode.FAILED;
  });
}
