import { describe, expect, it } from 'vitest';
import { lakesBehindNote, windowedStreamStatus, type LakeStatus } from '../../src/commands/status.js';
import type { PlannedWindow } from '../../src/state/store.js';

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
      pendingRange: '2025-12-01..2025-12-04',
    });
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

describe("status's note on lakes behind the warehouse (lakesBehindNote)", () => {
  const lake = (l: string, format: string, source: string, onDisk: boolean | null = true): LakeStatus => ({
    lake: l,
    format,
    source,
    partitions_behind: 3,
    dates: '',
    on_disk: onDisk,
  });

  it('names the options of the one sync that brings a lake up to date, once for all its sources', () => {
    const [note, ...more] = lakesBehindNote([lake('/data/lake', 'parquet', 'a'), lake('/data/lake', 'parquet', 'b')]);
    expect(more).toEqual([]);
    expect(note).toContain('the next sync with --format parquet --out /data/lake writes them.');
    expect(note.match(/--out/g)).toHaveLength(1);
  });

  it("names each lake behind, and a catalog's lake by its catalog rather than an --out", () => {
    const [note] = lakesBehindNote([
      lake('s3://bucket/lake', 'iceberg', 'a', null),
      lake('https://catalog.example/api (warehouse w), namespace costsync', 'iceberg', 'a', null),
    ]);
    expect(note).toContain(
      'each of --format iceberg --out s3://bucket/lake; the catalog https://catalog.example/api (warehouse w), namespace costsync',
    );
  });

  it('says a directory lake not on this disk is written whole by its next run, apart from the lakes behind; nothing when all hold what the warehouse does', () => {
    const notes = lakesBehindNote([lake('/gone', 'parquet', 'a', false), lake('/here', 'iceberg', 'a')]);
    expect(notes).toHaveLength(2);
    expect(notes[0]).toContain('--format iceberg --out /here writes them');
    expect(notes[1]).toContain("not on this machine's disk");
    expect(notes[1]).toContain('--format parquet --out /gone there writes it whole');
    expect(lakesBehindNote([{ ...lake('/here', 'parquet', 'a'), partitions_behind: 0 }])).toEqual([]);
  });
});
