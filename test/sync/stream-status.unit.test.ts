import { describe, expect, it } from 'vitest';
import { anomalyStreamStatus, lakeNotes, windowedStreamStatus, type LakeStatus } from '../../src/commands/status.js';
import type { PlannedWindow } from '../../src/state/store.js';
import { formatTable } from '../../src/table.js';

const w = (start: string, status: PlannedWindow['status'], fetched: boolean): PlannedWindow => ({
  start,
  end: start,
  status,
  cursor: null,
  page: fetched ? 3 : 0,
  fetched,
});

describe('status of a windowed stream (windowedStreamStatus)', () => {
  it('counts the windows not yet stored, and among them the fetched ones the next run stores without fetching', () => {
    const st = {
      syncedFrom: '2025-01-01',
      syncedThrough: '2025-11-30',
      lastSuccessAt: '2025-12-01T06:00:00Z',
      pending: {
        from: '2025-12-01',
        to: '2025-12-04',
        fullRefresh: false,
        windows: [
          w('2025-12-01', 'done', true),
          w('2025-12-02', 'active', true),
          w('2025-12-03', 'active', false),
          w('2025-12-04', 'todo', false),
        ],
      },
    };
    expect(windowedStreamStatus('line_items', st)).toEqual({
      stream: 'line_items',
      watermark: '2025-01-01..2025-11-30 (unchecked)',
      gaps: null,
      lastSuccessAt: '2025-12-01T06:00:00Z',
      windowsPending: 3,
      windowsFetched: 1,
      // The dates still to store: the stored first window is left out.
      pendingRange: '2025-12-02..2025-12-04',
    });
    // A stored window between open ones splits the range.
    const split = {
      ...st,
      pending: {
        ...st.pending,
        windows: [
          w('2025-12-01', 'todo', false),
          w('2025-12-02', 'done', true),
          w('2025-12-03', 'todo', false),
          w('2025-12-04', 'active', false),
        ],
      },
    };
    expect(windowedStreamStatus('line_items', split).pendingRange).toBe('2025-12-01..2025-12-01, 2025-12-03..2025-12-04');
  });

  it('a stream with no plan under way and nothing synced yet', () => {
    expect(windowedStreamStatus('rollups', { syncedFrom: null, syncedThrough: null, lastSuccessAt: null, pending: null })).toEqual({
      stream: 'rollups',
      watermark: null,
      gaps: null,
      lastSuccessAt: null,
      windowsPending: 0,
      windowsFetched: 0,
      pendingRange: null,
    });
  });

  it('ranges with their gaps, never a min..max across a gap', () => {
    const st = {
      syncedFrom: '2026-10-01',
      syncedThrough: '2026-11-26',
      covered: [
        { from: '2026-10-01', to: '2026-10-05' },
        { from: '2026-11-01', to: '2026-11-26' },
      ],
      lastSuccessAt: null,
      pending: null,
    };
    expect(windowedStreamStatus('line_items', st)).toMatchObject({
      watermark: '2026-10-01..2026-10-05, 2026-11-01..2026-11-26',
      gaps: '2026-10-06..2026-10-31',
    });
  });
});

describe('status of the anomalies (anomalyStreamStatus)', () => {
  it('shows the latest alert and leaves the window columns empty: anomalies are collected whole, not in windows', () => {
    const status = anomalyStreamStatus({ watermark: '2025-12-30', lastSuccessAt: '2025-12-31T06:00:00Z' });
    expect(status).toEqual({
      stream: 'anomalies',
      watermark: '2025-12-30',
      gaps: null,
      lastSuccessAt: '2025-12-31T06:00:00Z',
      windowsPending: null,
      windowsFetched: null,
      pendingRange: null,
    });
    // Printed beside the windowed streams, the anomalies' window cells are blank, not a 0 that says nothing is left.
    const table = formatTable([
      windowedStreamStatus('rollups', { syncedFrom: null, syncedThrough: null, lastSuccessAt: null, pending: null }),
      status,
    ]);
    expect(table.split('\n')[3]).toMatch(/^anomalies\s+2025-12-30\s+2025-12-31T06:00:00Z$/);
  });
});

describe("status's note on lakes that have not caught up with the warehouse (lakeNotes)", () => {
  const lake = (l: string, format: string, source: string, onDisk: boolean | null = true, toWrite = 3): LakeStatus => ({
    lake: l,
    format,
    source,
    partitions_to_write: toWrite,
    dates: toWrite > 0 ? '2025-06-01..2025-06-03' : null,
    on_disk: onDisk,
  });

  it('one line a lake, naming the sync that brings it up to date, once for all its sources', () => {
    const notes = lakeNotes([lake('/data/lake', 'parquet', 'a'), lake('/data/lake', 'parquet', 'b', true, 0)]);
    expect(notes).toEqual([
      'Lake /data/lake has not caught up with the warehouse (a run into it stopped, or runs without it wrote since): the next sync with --format parquet --out /data/lake writes what it lacks.',
    ]);
  });

  it("a line for each lake behind, a catalog's lake named by its catalog rather than an --out; none for a lake that holds all", () => {
    const notes = lakeNotes([
      lake('s3://bucket/lake/', 'iceberg', 'a', null),
      lake('https://catalog.example/api (warehouse w), namespace costsync', 'iceberg', 'a', null),
      lake('/up/to/date', 'parquet', 'a', true, 0),
    ]);
    expect(notes).toHaveLength(2);
    expect(notes[0]).toContain('the next sync with --format iceberg --out s3://bucket/lake/ writes what it lacks');
    expect(notes[1]).toMatch(
      /^Lake https:\/\/catalog.example\/api \(warehouse w\), namespace costsync has not caught up .*the next sync through that catalog writes/,
    );
  });

  it('says a directory lake not on this disk is written whole by a sync here', () => {
    expect(lakeNotes([lake('/gone', 'parquet', 'a', false, 0)])).toEqual([
      "Lake /gone is not on this machine's disk (deleted, moved, or written from another machine): a sync with --format parquet --out /gone here writes it whole.",
    ]);
  });
});
