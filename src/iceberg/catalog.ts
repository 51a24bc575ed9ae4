/**
 * Where a table's current metadata lives and how a commit swaps it: the one seam between the two kinds
 * of Iceberg table costsync writes. A directory table (`metadata/v<N>.metadata.json`, created only if
 * absent, then `version-hint.text`) applies a commit itself; a REST catalog (`rest-client.ts`) is sent
 * it. Both take the same change (requirements, updates), and both hand out the store a table's files
 * (data files, manifests, manifest lists) are written to.
 */
import type { TableMetadata } from './metadata.js';
import type { CommitOutcome, TableChange } from './rest-types.js';
import type { OutputTarget } from '../outputs/target.js';
import type { IcebergSchema } from './schema.js';
import type { PartitionSpec } from './avro.js';

/** A table as loaded: its metadata (null: no table yet) and where its files go. */
export interface LoadedTable {
  /** The directory table's metadata version (0: none yet); 0 for a catalog's table. */
  version: number;
  metadata: TableMetadata | null;
  /** The metadata file `metadata` was read from (null: none yet). */
  metadataLocation: string | null;
  /** Where the table's files are read and written, keyed `<table>/…` as the lake's keys are. */
  store: OutputTarget;
}

/** What a new table is made with (a catalog may assign other field ids: the created metadata's are used). */
export interface NewTable {
  schema: IcebergSchema;
  spec: PartitionSpec;
  properties: Record<string, string>;
}

export interface TableCommit {
  table: string;
  base: LoadedTable;
  change: TableChange;
  /** The writer's clock when it built the change (a directory table's metadata is stamped with it). */
  nowMs: number;
}

export interface IcebergCatalog {
  readonly kind: 'directory' | 'rest';
  /** For messages: the directory, or the catalog's URL and namespace. */
  readonly where: string;
  /** A table as messages name it: `at <its location>`, or `<namespace>.<table> in <catalog>`. */
  name(table: string): string;
  /** Whether `commitAll` commits several tables in one atomic step. */
  readonly transactions: boolean;
  load(table: string): Promise<LoadedTable>;
  /**
   * The table, created first when missing. A directory table is created by its first commit, so this
   * only loads it there; a catalog creates it now, so data files carry the field ids it assigned.
   */
  ensure(table: string, init: () => NewTable): Promise<LoadedTable>;
  /**
   * Commits one table's change on top of `base`. For a directory table whose `base` has no metadata
   * yet, `initial` is the table being created.
   */
  commit(c: TableCommit, initial?: TableMetadata): Promise<CommitOutcome>;
  /** Commits several tables' changes at once, all or none (only when `transactions`). */
  commitAll(commits: readonly TableCommit[]): Promise<CommitOutcome>;
}
