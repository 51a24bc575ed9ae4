import { describe, expect, it } from 'vitest';
import type { AnomaliesQuery } from '../../src/api/client.js';
import type { Anomaly } from '../../src/api/types.js';
import { ApiError, ClientErrorCode } from '../../src/errors.js';
import { anomalySince, collectAnomalies, isAscending, nextSinceAfterAscendingPage } from '../../src/sync/anomalies.js';

const mk = (id: string, at: string, over: Partial<Anomaly> = {}): Anomaly => ({
  id,
  provider_type: 'aws',
  service: 's',
  detected_date: at,
  actual_cost: 2,
  expected_cost: 1,
  deviation_percent: 100,
  severity: 'low',
  alert_type: 'spend_spike',
  status: 'new',
  ...over,
});

/** A fake endpoint over a fixed list, answering in the given order, as the spec allows. */
function fakeEndpoint(all: Anomaly[], order: 'asc' | 'desc') {
  const calls: AnomaliesQuery[] = [];
  const fetch = async (q: AnomaliesQuery) => {
    calls.push(q);
    const since = q.since ? Date.parse(q.since) : -Infinity;
    const hits = all.filter(
      (a) =>
        Date.parse(a.detected_date) > since &&
        (!q.severity || a.severity === q.severity) &&
        (!q.status || a.status === q.status) &&
        (!q.provider_type || a.provider_type === q.provider_type),
    );
    hits.sort((a, b) => (order === 'asc' ? 1 : -1) * (Date.parse(a.detected_date) - Date.parse(b.detected_date)));
    return hits.slice(0, q.limit ?? 10);
  };
  return { fetch, calls };
}

describe('collectAnomalies', () => {
  it('takes one request when nothing is hidden', async () => {
    const all = [mk('a', '2025-01-01T00:00:00Z'), mk('b', '2025-01-02T00:00:00Z')];
    const { fetch, calls } = fakeEndpoint(all, 'desc');
    const got = await collectAnomalies(fetch, undefined, [], 10);
    expect([...got.records.keys()].sort()).toEqual(['a', 'b']);
    expect(calls).toHaveLength(1);
    expect(got.unreachable).toEqual([]);
  });

  it('splits a full response by severity, status and provider until none is full', async () => {
    const severities = ['low', 'medium', 'high', 'critical'];
    const statuses = ['new', 'acknowledged', 'resolved'];
    const all: Anomaly[] = [];
    for (let i = 0; i < 60; i++) {
      all.push(
        mk(`x${i}`, new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString(), {
          severity: severities[i % 4]!,
          status: statuses[i % 3]!,
          provider_type: `p${i % 5}`,
        }),
      );
    }
    const { fetch, calls } = fakeEndpoint(all, 'desc');
    const got = await collectAnomalies(fetch, undefined, [], 4);
    expect(got.records.size).toBe(60);
    expect(calls.some((c) => c.provider_type !== undefined)).toBe(true);
    expect(got.unreachable).toEqual([]);
  });

  it('starts split by severity when told the alerts overflow one response: one request fewer, the same alerts, deeper splits still made', async () => {
    const severities = ['low', 'medium', 'high', 'critical'];
    const all = Array.from({ length: 30 }, (_, i) =>
      mk(`s${i}`, new Date(Date.UTC(2025, 0, 1) + i * 3_600_000).toISOString(), {
        // Eleven low ones: that severity alone overflows a response of 10 and is split further.
        severity: i < 11 ? 'low' : severities[1 + (i % 3)]!,
        status: i % 2 === 0 ? 'new' : 'resolved',
      }),
    );
    const unfiltered = fakeEndpoint(all, 'desc');
    const first = await collectAnomalies(unfiltered.fetch, undefined, [], 10);
    const split = fakeEndpoint(all, 'desc');
    const second = await collectAnomalies(split.fetch, undefined, [], 10, () => false, true);
    expect([...second.records.keys()].sort()).toEqual([...first.records.keys()].sort());
    expect(second.records.size).toBe(30);
    expect(split.calls).toHaveLength(unfiltered.calls.length - 1);
    expect(split.calls.every((c) => c.severity !== undefined)).toBe(true);
    expect(split.calls.some((c) => c.status !== undefined)).toBe(true);
  });

  it('moves since forward over an ascending server once the filters are exhausted', async () => {
    const all = Array.from({ length: 25 }, (_, i) => mk(`t${i}`, new Date(Date.UTC(2025, 0, 1, 0, Math.floor(i / 2))).toISOString()));
    const { fetch } = fakeEndpoint(all, 'asc');
    const got = await collectAnomalies(fetch, undefined, ['aws'], 5);
    expect(got.records.size).toBe(25);
    expect(got.unreachable).toEqual([]);
  });

  it('reports what it cannot reach: more than a page on one timestamp with the same filters', async () => {
    const all = Array.from({ length: 8 }, (_, i) => mk(`same${i}`, '2025-01-01T00:00:00Z'));
    for (const order of ['asc', 'desc'] as const) {
      const got = await collectAnomalies(fakeEndpoint(all, order).fetch, undefined, [], 5);
      expect(got.unreachable).toHaveLength(1);
      expect(got.unreachable[0]!.filters).toEqual({ severity: 'low', status: 'new', provider_type: 'aws' });
    }
  });

  it('counts as pages only the responses received: a request the stop cut is not one', async () => {
    // Enough alerts that every response is full and the collection keeps splitting.
    const all = Array.from({ length: 40 }, (_, i) => mk(`s${i}`, new Date(Date.UTC(2025, 0, 1, i)).toISOString(), { severity: 'high' }));
    const endpoint = fakeEndpoint(all, 'desc');
    let stopping = false;
    const fetch = async (q: AnomaliesQuery) => {
      if (endpoint.calls.length === 2) {
        // The third request is in flight when the run stops: the client ends it with CS_ERR_ABORTED.
        stopping = true;
        endpoint.calls.push(q);
        throw new ApiError(ClientErrorCode.ABORTED, 'GET /anomalies was not completed: the run is stopping', { path: '/anomalies' });
      }
      return endpoint.fetch(q);
    };
    const got = await collectAnomalies(fetch, undefined, ['aws'], 5, () => stopping);
    expect(endpoint.calls).toHaveLength(3);
    expect(got.stopped).toBe(true);
    expect(got.pages).toBe(2);
  });

  it('finds ascending order and the safe next since', () => {
    const page = [mk('a', '2025-01-01T00:00:00Z'), mk('b', '2025-01-01T00:00:05Z'), mk('c', '2025-01-01T00:00:05Z')];
    expect(isAscending(page)).toBe(true);
    expect(isAscending([...page].reverse())).toBe(false);
    expect(nextSinceAfterAscendingPage(page)).toBe('2025-01-01T00:00:00.000Z');
    expect(nextSinceAfterAscendingPage([page[1]!, page[2]!])).toBeNull();
  });
});

describe('anomalySince', () => {
  const now = Date.parse('2025-07-01T06:00:00Z');
  const req = { until: '2025-07-01', startDate: '2025-04-01', refreshDays: 30, fullRefresh: false };
  it('starts a first run at the start date, inclusive', () => {
    expect(anomalySince(null, req, now)).toBe('2025-03-31T23:59:59.999Z');
  });
  it('re-reads the refresh window, or the watermark less an hour when that is earlier', () => {
    expect(anomalySince('2025-06-30T12:00:00Z', req, now)).toBe('2025-05-31T23:59:59.999Z');
    expect(anomalySince('2025-05-01T12:00:00Z', req, now)).toBe('2025-05-01T11:00:00.000Z');
  });
  it('honours --since and a full refresh', () => {
    expect(anomalySince('2025-06-30T12:00:00Z', { ...req, since: '2025-01-01' }, now)).toBe('2024-12-31T23:59:59.999Z');
    expect(anomalySince('2025-06-30T12:00:00Z', { ...req, fullRefresh: true }, now)).toBe('2025-03-31T23:59:59.999Z');
  });
  it('a full refresh covers every alert stored, from the first stored date when it is before the start date', () => {
    expect(anomalySince('2025-06-30T12:00:00Z', { ...req, fullRefresh: true, storedFrom: '2025-01-01' }, now)).toBe(
      '2024-12-31T23:59:59.999Z',
    );
    expect(anomalySince('2025-06-30T12:00:00Z', { ...req, fullRefresh: true, storedFrom: '2025-05-01' }, now)).toBe(
      '2025-03-31T23:59:59.999Z',
    );
    expect(anomalySince('2025-06-30T12:00:00Z', { ...req, fullRefresh: true, storedFrom: null }, now)).toBe('2025-03-31T23:59:59.999Z');
    // --since names the start, whatever is stored; without a full refresh what is stored does not move it.
    expect(anomalySince('2025-06-30T12:00:00Z', { ...req, fullRefresh: true, since: '2025-03-01', storedFrom: '2025-01-01' }, now)).toBe(
      '2025-02-28T23:59:59.999Z',
    );
    expect(anomalySince(null, { ...req, storedFrom: '2025-01-01' }, now)).toBe('2025-03-31T23:59:59.999Z');
  });
  it('reads the recheck horizon again, from its first instant, never before the first alert stored', () => {
    const watermark = '2025-06-30T12:00:00Z';
    expect(anomalySince(watermark, { ...req, horizonFrom: '2025-05-01', storedFrom: '2025-04-02' }, now)).toBe('2025-04-30T23:59:59.999Z');
    // A source whose alerts start inside the horizon: from its first alert, not the horizon's start (nothing outside what it synced).
    expect(anomalySince(watermark, { ...req, horizonFrom: '2025-05-01', storedFrom: '2025-05-20' }, now)).toBe('2025-05-19T23:59:59.999Z');
    // Nothing stored, or no horizon: the refresh window alone.
    expect(anomalySince(watermark, { ...req, horizonFrom: '2025-05-01', storedFrom: null }, now)).toBe('2025-05-31T23:59:59.999Z');
    expect(anomalySince(watermark, { ...req, horizonFrom: null, storedFrom: '2025-04-02' }, now)).toBe('2025-05-31T23:59:59.999Z');
  });
});
