/**
 * `costsync export --focus-version V`: a version's FOCUS view to a file, with FOCUS 1.3's metadata
 * beside it (Dataset Instance, Recency, Schema, Data Generator) read in the same snapshot, so the
 * metadata describes exactly the rows written. The metadata file goes away before the new data takes
 * its place and comes back after it: a kill between the two leaves data without metadata, never
 * metadata that claims what the data does not hold.
 */
import { rename, rm, stat } from 'node:fs/promises';
import { basename, extname, resolve } from 'node:path';
import { writeFileAtomic } from '../durable-file.js';
import { packageVersion } from '../paths.js';
import { copyBeside } from '../query.js';
import type { ReadOnlyWarehouse } from '../storage/duckdb.js';
import { FOCUS_VERSIONS } from './columns.js';

export type FocusVersion = (typeof FOCUS_VERSIONS)[number]['version'];

/** The versions an export takes, oldest first. */
export const EXPORT_VERSIONS: readonly FocusVersion[] = FOCUS_VERSIONS.map((v) => v.version);

/** The first version with Dataset Instance and Recency metadata. */
const METADATA_SINCE: FocusVersion = '1.3';

/** A source's row of `focus_dataset_instances`. */
export interface InstanceRow {
  DatasetInstanceId: string;
  DatasetInstanceName: string;
  FocusDatasetId: string;
  DatasetInstanceLastUpdated: string;
  RecencyLastUpdated: string;
}

/** A row of `focus_recency`: one source's day. */
export interface SectorRow {
  DatasetInstanceId: string;
  TimeSectorStart: string;
  TimeSectorEnd: string;
  TimeSectorComplete: boolean;
  TimeSectorLastUpdated: string;
}

/** FOCUS's Date/Time Format: ISO 8601 in UTC to the second (`2026-12-08T02:36:12Z`). Pure. */
export function focusDateTime(value: string): string {
  return new Date(value).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A column's data type as the metadata's ColumnDefinition names it (FOCUS's names), from its DuckDB type. Pure. */
export function focusDataType(duckdbType: string): string {
  if (/^(DECIMAL|DOUBLE|FLOAT|REAL|BIGINT|INTEGER|HUGEINT|SMALLINT|TINYINT|UBIGINT|UINTEGER)/.test(duckdbType)) return 'Decimal';
  if (duckdbType.startsWith('TIMESTAMP') || duckdbType === 'DATE') return 'Date/Time';
  if (duckdbType === 'BOOLEAN') return 'Boolean';
  return duckdbType === 'JSON' ? 'JSON' : 'String';
}

/** The metadata file written beside `file`: `focus.parquet` -> `focus.parquet.metadata.json` (one per data file, whatever its format). Pure. */
export function metadataFileOf(file: string): string {
  return `${file}.metadata.json`;
}

/** COPY options that write date-times in FOCUS's Date/Time Format in text files (Parquet keeps its own type). Pure. */
export function timeFormatOptions(file: string): string {
  return extname(file).toLowerCase() === '.parquet' ? '' : ", TIMESTAMPFORMAT '%Y-%m-%dT%H:%M:%SZ'";
}

/** The FOCUS metadata of an export, from its snapshot's instances and sectors. Pure. */
export function focusMetadata(
  version: FocusVersion,
  instances: readonly InstanceRow[],
  sectors: readonly SectorRow[],
  data: { file: string; rows: number; bytes: number; columns: readonly { name: string; type: string }[]; createdAt: string },
): Record<string, unknown> {
  // Every column the file holds, the x_ extras included.
  const schema = {
    SchemaId: `costsync-focus-${version}`,
    FocusVersion: version,
    CreationDate: focusDateTime(data.createdAt),
    ColumnDefinition: data.columns.map((c) => ({ ColumnName: c.name, DataType: focusDataType(c.type) })),
  };
  return {
    DataGenerator: { DataGenerator: 'costsync', x_DataGeneratorVersion: packageVersion() },
    DatasetInstance: instances.map((i) => ({
      DatasetInstanceId: i.DatasetInstanceId,
      DatasetInstanceName: i.DatasetInstanceName,
      FocusDatasetId: i.FocusDatasetId,
    })),
    Recency: instances.map((i) => ({
      DatasetInstanceId: i.DatasetInstanceId,
      DatasetInstanceLastUpdated: focusDateTime(i.DatasetInstanceLastUpdated),
      RecencyLastUpdated: focusDateTime(i.RecencyLastUpdated),
      TimeSectors: sectors
        .filter((s) => s.DatasetInstanceId === i.DatasetInstanceId)
        .map((s) => ({
          TimeSectorStart: focusDateTime(s.TimeSectorStart),
          TimeSectorEnd: focusDateTime(s.TimeSectorEnd),
          TimeSectorComplete: s.TimeSectorComplete,
          TimeSectorLastUpdated: focusDateTime(s.TimeSectorLastUpdated),
        })),
    })),
    // The one schema of the file, for each dataset instance in it.
    Schema: instances.length === 0 ? [schema] : instances.map((i) => ({ ...schema, DatasetInstanceId: i.DatasetInstanceId })),
    // Which file, and how much of it, this metadata describes: a reader can tell it from another export's.
    x_DataFile: { Name: basename(data.file), Rows: data.rows, Bytes: data.bytes },
  };
}

/** What an export wrote. */
export interface FocusExport {
  rows: number;
  /** The metadata file, or null for a version without Recency (1.2). */
  metadata: string | null;
  sources: number;
}

/** Writes version `version`'s FOCUS rows to `file` and, from 1.3 on, its metadata beside it, from one snapshot. */
export async function exportFocus(warehouse: ReadOnlyWarehouse, version: FocusVersion, file: string): Promise<FocusExport> {
  const target = resolve(file);
  const view = FOCUS_VERSIONS.find((v) => v.version === version)!.view;
  const withMetadata = version >= METADATA_SINCE;
  await warehouse.sql('BEGIN TRANSACTION');
  let open = true;
  let tmp: string | null = null;
  let release = () => undefined as void;
  try {
    // Text files' date-times in FOCUS's format, in UTC.
    await warehouse.sql("SET TimeZone = 'UTC'");
    const copied = await copyBeside(warehouse, `SELECT * FROM ${view}`, target, false, timeFormatOptions(target));
    release = copied.release;
    tmp = copied.tmp;
    const columns = await warehouse.sql<{ name: string; type: string }>(
      'SELECT column_name AS name, data_type AS type FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position',
      [view],
    );
    const instances = withMetadata
      ? await warehouse.sql<InstanceRow>(
          'SELECT DatasetInstanceId, DatasetInstanceName, FocusDatasetId, DatasetInstanceLastUpdated::VARCHAR AS DatasetInstanceLastUpdated, RecencyLastUpdated::VARCHAR AS RecencyLastUpdated FROM focus_dataset_instances ORDER BY DatasetInstanceId',
        )
      : [];
    const sectors = withMetadata
      ? await warehouse.sql<SectorRow>(
          'SELECT DatasetInstanceId, TimeSectorStart::VARCHAR AS TimeSectorStart, TimeSectorEnd::VARCHAR AS TimeSectorEnd, TimeSectorComplete, TimeSectorLastUpdated::VARCHAR AS TimeSectorLastUpdated FROM focus_recency ORDER BY DatasetInstanceId, TimeSectorStart',
        )
      : [];
    await warehouse.sql('COMMIT');
    open = false;
    const metadataFile = metadataFileOf(target);
    // The old metadata goes first: it must never describe the new data, nor the new the old.
    await rm(metadataFile, { force: true });
    const bytes = (await stat(tmp)).size;
    await rename(tmp, target);
    tmp = null;
    if (withMetadata) {
      const metadata = focusMetadata(version, instances, sectors, {
        file: target,
        rows: copied.rows,
        bytes,
        columns,
        createdAt: new Date().toISOString(),
      });
      await writeFileAtomic(metadataFile, `${JSON.stringify(metadata, null, 2)}\n`, { mode: 0o644 });
    }
    return { rows: copied.rows, metadata: withMetadata ? metadataFileOf(file) : null, sources: instances.length };
  } finally {
    release();
    if (tmp !== null) await rm(tmp, { force: true });
    if (open) await warehouse.sql('ROLLBACK').catch(() => undefined);
  }
}
