import { describe, expect, it } from 'vitest';
import { ExitCode } from '../../src/errors.js';
import { metricBlocks, pendingKinds, prometheusText, refusedRunText, type MetricFacts } from '../../src/outputs/metrics.js';
import { toS3Error } from '../../src/outputs/s3.js';
import { awsSettingsOf } from '../../src/outputs/s3-url.js';

const op = { action: 's3:PutObject' as const, bucket: 'acme', key: 'costs/line_items/x.parquet' };
const sdk = (name: string, status?: number, message = '') =>
  Object.assign(new Error(message), { name, ...(status ? { $metadata: { httpStatusCode: status } } : {}) });

describe('toS3Error: what the SDK threw, as an error naming action, bucket, key and the fix', () => {
  it.each([
    [
      sdk('CredentialsProviderError', undefined, 'Could not load credentials from any providers'),
      'CS_ERR_S3_CREDENTIALS',
      ExitCode.AUTH,
      /AWS_ACCESS_KEY_ID/,
    ],
    [sdk('Error', undefined, 'Region is missing'), 'CS_ERR_S3_REGION', ExitCode.USAGE, /AWS_REGION/],
    [sdk('AccessDenied', 403), 'CS_ERR_S3_ACCESS_DENIED', ExitCode.AUTH, /Grant s3:PutObject on arn:aws:s3:::acme\/costs\/line_items\/\*/],
    [sdk('PreconditionFailed', 412), 'CS_ERR_S3_PRECONDITION', ExitCode.LOCKED, /nothing was overwritten/],
    [sdk('NoSuchBucket', 404), 'CS_ERR_S3_NO_BUCKET', ExitCode.USAGE, /Create the bucket/],
    [sdk('SlowDown', 503, 'Please reduce your request rate'), 'CS_ERR_S3', ExitCode.FAILED, /the next run tries again/],
  ])('%s', (error, code, exitCode, hint) => {
    const e = toS3Error(error, op);
    expect({ code: e.code, exitCode: e.exitCode, bucket: e.bucket, key: e.key, action: e.action }).toEqual({ code, exitCode, ...op });
    expect(e.hint).toMatch(hint);
    expect(e.message).toContain('s3://acme/costs/line_items/x.parquet');
  });
});

describe("awsSettingsOf: a command's own environment gives the bucket's region and keys", () => {
  it("leaves the process's environment to the SDK's chain, and takes a command's region and key pair (with its session token)", () => {
    expect(awsSettingsOf(process.env)).toEqual({});
    expect(awsSettingsOf({ AWS_REGION: 'eu-west-1', AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret' })).toEqual({
      region: 'eu-west-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
    });
    expect(awsSettingsOf({ AWS_ACCESS_KEY_ID: 'AKID', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'token' })).toEqual({
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret', sessionToken: 'token' },
    });
    // Half a key pair is no key pair: the chain looks further (a profile, a role).
    expect(awsSettingsOf({ AWS_ACCESS_KEY_ID: 'AKID' })).toEqual({});
  });
});

describe('prometheusText', () => {
  it('writes gauges with HELP and TYPE, escaped labels, one outcome set to 1, and leaves out what is unknown', () => {
    const facts: MetricFacts = {
      runs: [
        {
          source: 'acme "eu"',
          run_id: 'r1',
          outcome: 'stopped',
          started_s: 10,
          ended_s: 20,
          duration_s: 10,
          requests: 7,
          retries: 1,
          rate_limited: 0,
          warnings: 2,
          notifications_sent: 0,
          notification_failures: 0,
          last_success_s: null,
        },
      ],
      streams: [
        {
          source: 'acme "eu"',
          stream: 'line_items',
          inserted: 5,
          updated: 0,
          deleted: 1,
          older_changed: 2,
          older_synced: 1,
          responses: { 200: 6, 429: 1 },
        },
      ],
      openAnomalies: [{ source: 'acme "eu"', severity: 'high', n: 3 }],
      latestSpend: [],
      outboxPending: [{ output: 'publish', n: 1 }],
    };
    const text = prometheusText(facts);
    const lines = text.trimEnd().split('\n');
    expect(lines).toContain('# TYPE costsync_last_run_outcome gauge');
    expect(lines).toContain('costsync_last_run_outcome{source="acme \\"eu\\"",outcome="stopped"} 1');
    expect(lines).toContain('costsync_last_run_outcome{source="acme \\"eu\\"",outcome="success"} 0');
    expect(lines).toContain('costsync_last_run_requests{source="acme \\"eu\\"",endpoint="line_items",status="429"} 1');
    expect(lines).toContain('costsync_open_anomalies{source="acme \\"eu\\"",severity="low"} 0');
    expect(lines).toContain('costsync_last_run_older_dates{source="acme \\"eu\\"",stream="line_items",dates="changed"} 2');
    expect(lines).toContain('costsync_last_run_older_dates{source="acme \\"eu\\"",stream="line_items",dates="synced"} 1');
    expect(lines).toContain('costsync_outbox_pending{output="publish"} 1');
    // No last success yet, no spend: those metrics are absent, not zero.
    expect(text).not.toContain('costsync_last_success_timestamp_seconds');
    expect(text).not.toContain('costsync_latest_day_spend_usd');
    // Every sample's metric has its HELP and TYPE before it.
    for (const name of new Set(lines.filter((l) => !l.startsWith('#')).map((l) => l.split(/[{ ]/)[0]!))) {
      expect(lines.indexOf(`# TYPE ${name} gauge`), name).toBeLessThan(
        lines.findIndex((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)),
      );
    }
  });
});

describe("pendingKinds: whose outbox rows count as each output's pending work", () => {
  it("a run's lake counts its partitions, commits and run tables, manifests only a Parquet lake's; a run with no lake counts none; the published file leaves out the run tables it always holds", () => {
    const partitions = ['partition', 'iceberg-commit', 'iceberg-expiry'];
    expect(pendingKinds('parquet')).toEqual({ lake: [...partitions, 'run-tables'], manifest: ['manifest'] });
    expect(pendingKinds('iceberg')).toEqual({ lake: [...partitions, 'run-tables'], manifest: [] });
    expect(pendingKinds(null)).toEqual({ lake: [], manifest: [] });
    expect(pendingKinds('published')).toEqual({ lake: partitions, manifest: ['manifest'] });
  });
});

describe('refusedRunText: the metrics file of a run refused by the lock', () => {
  const previous = [
    '# HELP costsync_last_run_timestamp_seconds When the last run of the source ended (Unix time).',
    '# TYPE costsync_last_run_timestamp_seconds gauge',
    'costsync_last_run_timestamp_seconds{source="default"} 100',
    '# HELP costsync_last_success_timestamp_seconds When the last successful run of the source ended (Unix time).',
    '# TYPE costsync_last_success_timestamp_seconds gauge',
    'costsync_last_success_timestamp_seconds{source="default"} 100',
    '# HELP costsync_last_run_outcome x',
    '# TYPE costsync_last_run_outcome gauge',
    'costsync_last_run_outcome{source="default",outcome="success"} 1',
    '# HELP costsync_last_run_rows x',
    '# TYPE costsync_last_run_rows gauge',
    'costsync_last_run_rows{source="default",stream="line_items",change="inserted"} 5',
    '# HELP costsync_open_anomalies x',
    '# TYPE costsync_open_anomalies gauge',
    'costsync_open_anomalies{source="default",severity="high"} 2',
    '',
  ].join('\n');

  it("says locked for each source, and carries the last success and the warehouse's facts over; the last run's counts go", () => {
    const text = refusedRunText(previous, { sources: ['default'], startedS: 200, endedS: 201 });
    const lines = text.trimEnd().split('\n');
    expect(lines).toContain('costsync_last_run_outcome{source="default",outcome="locked"} 1');
    expect(lines).toContain('costsync_last_run_outcome{source="default",outcome="success"} 0');
    expect(lines).toContain('costsync_last_run_timestamp_seconds{source="default"} 201');
    expect(lines).toContain('costsync_last_run_duration_seconds{source="default"} 1');
    expect(lines).toContain('costsync_last_success_timestamp_seconds{source="default"} 100');
    expect(lines).toContain('costsync_open_anomalies{source="default",severity="high"} 2');
    // The previous run's rows were not this run's: gone, not repeated.
    expect(text).not.toContain('costsync_last_run_rows');
    // Each metric once, HELP and TYPE first (the collector refuses a file with a metric twice).
    const blocks = metricBlocks(text);
    for (const [name, block] of blocks) {
      expect(block[0], name).toMatch(new RegExp(`^# HELP ${name} `));
      expect(block[1], name).toBe(`# TYPE ${name} gauge`);
    }
    expect(text.split('\n').filter((l) => l.startsWith('# TYPE ')).length).toBe(blocks.size);
  });

  it('with no file before it: the outcome, and no last success (absent, not 0)', () => {
    const text = refusedRunText(null, { sources: ['eu', 'us'], startedS: 5, endedS: 5 });
    expect(text).toContain('costsync_last_run_outcome{source="us",outcome="locked"} 1');
    expect(text).not.toContain('costsync_last_success_timestamp_seconds');
  });
});

describe('which lake objects a runner owns (pure)', () => {
  it("its sources' partitions, Iceberg data files and manifests; never another source's, nor shared metadata", async () => {
    const { ownedBy } = await import('../../src/outputs/lake.js');
    const owned = ownedBy(['eu', 'us']);
    expect(
      [
        'line_items/source=eu/date=2025-06-01/data.parquet',
        'line_items/data/source=us/usage_date_month=2025-06/x.parquet',
        '_costsync_manifest.eu.json',
        '_costsync_state.us.json',
      ].every(owned),
    ).toBe(true);
    expect(
      [
        'line_items/source=apac/date=2025-06-01/data.parquet',
        'line_items/data/source=apac/x.parquet',
        'line_items/metadata/v3.metadata.json',
        '_costsync_manifest.apac.json',
        '_costsync_state.apac.json',
      ].some(owned),
    ).toBe(false);
  });
});

describe("a source's state object in the lake (pure)", () => {
  it('names, per table, each date its state lists that the rows read back lack', async () => {
    const { missingDates, stateObjectKey } = await import('../../src/outputs/lake-seed.js');
    expect(stateObjectKey('eu')).toBe('_costsync_state.eu.json');
    const listed = { line_items: ['2025-06-01', '2025-06-03'], anomalies: ['2025-06-02', '2025-06-03'], rollups_daily: [] };
    const present = { line_items: ['2025-06-01', '2025-06-02', '2025-06-03'], anomalies: ['2025-06-02'] };
    expect(missingDates(listed, present)).toEqual(['anomalies/2025-06-03']);
    expect(missingDates({ line_items: ['2025-06-01'] }, present)).toEqual([]);
    expect(missingDates({ rollups_daily: ['2025-06-01'] }, present)).toEqual(['rollups_daily/2025-06-01']);
  });
});
