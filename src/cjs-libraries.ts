/**
 * The CommonJS libraries costsync runs on, loaded with `require`. Imported from an ES module, a CommonJS
 * package's files are each parsed again to find their export names, which cost every process about
 * 100 ms of its start for DuckDB's and undici's many files (docs/benchmarks.md, "Start-up").
 * Each getter loads its library on first use, so a command loads only what it needs.
 */
import { createRequire } from 'node:module';
import type * as DuckDBApi from '@duckdb/node-api';
import type * as Undici from 'undici';
import type BottleneckClass from 'bottleneck';
import type Avsc from 'avsc';

const require = createRequire(import.meta.url);

export const duckdbApi = (): typeof DuckDBApi => require('@duckdb/node-api') as typeof DuckDBApi;
export const undici = (): typeof Undici => require('undici') as typeof Undici;
export const bottleneck = (): typeof BottleneckClass => require('bottleneck') as typeof BottleneckClass;
export const avsc = (): typeof Avsc => require('avsc') as typeof Avsc;
