/**
 * The CommonJS libraries costsync runs on, loaded with `require`. Imported from an ES module, a CommonJS
 * package's files are each parsed again to find their export names: with each library loaded only on
 * first use, a process starts on about 0.2 s less CPU (docs/benchmarks.md, "Start-up").
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
