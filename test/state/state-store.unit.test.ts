import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { STATE_VERSION, StateStore, legacyStateFileName, removeStateLeftovers, stateFileName } from '../../src/state/store.js';
import { tmpName } from '../../src/durable-file.js';
import { withTempDir } from '../support/helpers.js';

const source = { name: 'default', baseUrl: 'https://api.example.com', keyFingerprint: 'abc123' };
const WAREHOUSE = 'costs-0123abcd';

describe('StateStore', () => {
  it('names the file after the warehouse and the source name, never the key, and starts empty', async () => {
    expect(stateFileName('acme-eu', WAREHOUSE)).toBe('costsync-state-costs-0123abcd--acme-eu.json');
    await withTempDir(async (dir) => {
      const store = new StateStore(dir, source, WAREHOUSE);
      const state = store.load();
      // No identity until the API has answered this run's key and URL.
      expect(state).toEqual({
        version: STATE_VERSION,
        source: { name: 'default', baseUrl: '', keyFingerprint: '' },
        streams: {},
        updatedAt: null,
      });
      // Once the API answered, the owner records the identity in a new value, which the store saves.
      await store.saveAsync({ ...state, source }, () => new Date('2025-07-01T00:00:00Z'));
      expect(new StateStore(dir, source, WAREHOUSE).load().source).toEqual(source);
    });
  });

  it('a rotated key or a changed base URL goes on where the last run stopped, with a notice', async () => {
    await withTempDir(async (dir) => {
      const store = new StateStore(dir, source, WAREHOUSE);
      const loadedFirst = store.load();
      const state = { ...loadedFirst, source, streams: { anomalies: { watermark: '2025-01-05T00:00:00.000Z', lastSuccessAt: null } } };
      await store.saveAsync(state, () => new Date('2025-07-01T00:00:00Z'));
      const rotated = new StateStore(dir, { ...source, keyFingerprint: 'def456', baseUrl: 'https://eu.example.com' }, WAREHOUSE);
      const loaded = rotated.load();
      expect(loaded.streams.anomalies!.watermark).toBe('2025-01-05T00:00:00.000Z');
      // Recorded only once the API answered with the new key (a failed run leaves the old identity).
      expect(loaded.source.keyFingerprint).toBe('abc123');
      expect(rotated.notices).toEqual([
        'the key for default changed since the last run (fingerprint abc123 is now def456); going on where the last run stopped',
        expect.stringMatching(
          /^the base URL of default changed since the last run \(https:\/\/api.example.com is now https:\/\/eu.example.com\).*--full-refresh/,
        ),
      ]);
    });
  });

  it('picks up a version 1 file (named by base URL and key) with its spooled pages, even after a key rotation, and removes it once saved', async () => {
    await withTempDir(async (dir) => {
      const { mkdirSync, existsSync } = await import('node:fs');
      const { join } = await import('node:path');
      const legacy = join(dir, legacyStateFileName(source.baseUrl, 'a1d999'));
      writeFileSync(
        legacy,
        JSON.stringify({
          version: 1,
          source: { baseUrl: source.baseUrl, keyFingerprint: 'a1d999' },
          streams: { anomalies: { watermark: 'w', lastSuccessAt: null } },
          updatedAt: null,
        }),
      );
      mkdirSync(join(dir, 'spool', legacyStateFileName(source.baseUrl, 'a1d999').replace(/\.json$/, ''), 'line_items'), {
        recursive: true,
      });
      const store = new StateStore(dir, source, WAREHOUSE);
      const state = { ...store.load(), source };
      expect(state).toMatchObject({ version: STATE_VERSION, source, streams: { anomalies: { watermark: 'w' } } });
      expect(store.notices[0]).toMatch(/the key for default changed/);
      expect(existsSync(join(store.spoolDir, 'line_items'))).toBe(true);
      await store.saveAsync(state, () => new Date('2025-07-01T00:00:00Z'));
      expect(existsSync(legacy)).toBe(false);
      expect(existsSync(store.path)).toBe(true);
    });
  });

  it('shares concurrent saves, and the last one holds every change made before it was asked for', async () => {
    await withTempDir(async (dir) => {
      const store = new StateStore(dir, source, WAREHOUSE);
      const loaded = store.load();
      const saves: Promise<void>[] = [];
      for (let i = 0; i < 5; i++) {
        const state = { ...loaded, streams: { anomalies: { watermark: `2025-01-0${i + 1}T00:00:00.000Z`, lastSuccessAt: null } } };
        saves.push(store.saveAsync(state, () => new Date('2025-07-01T00:00:00Z')));
      }
      await Promise.all(saves);
      expect(store.load().streams.anomalies!.watermark).toBe('2025-01-05T00:00:00.000Z');
      expect(saves[2]).toBe(saves[4]);
    });
  });

  it('writes atomically, owner-only, leaving no temp files, and reads back', async () => {
    await withTempDir(async (dir) => {
      const store = new StateStore(dir, source, WAREHOUSE);
      const state = { ...store.load(), streams: { anomalies: { watermark: '2025-01-01T00:00:00.000Z', lastSuccessAt: null } } };
      await store.saveAsync(state, () => new Date('2025-07-01T00:00:00Z'));
      expect(readdirSync(dir)).toEqual([store.path.split('/').at(-1)]);
      expect(statSync(store.path).mode & 0o777).toBe(0o600);
      expect(store.load()).toEqual({ ...state, updatedAt: '2025-07-01T00:00:00.000Z' });
    });
  });

  it('refuses corrupt, foreign and newer state files with a fix', async () => {
    await withTempDir(async (dir) => {
      const store = new StateStore(dir, source, WAREHOUSE);
      for (const [text, message] of [
        ['{"version": 1, "streams": {', /not valid JSON/],
        ['[1,2]', /not a costsync state file/],
        [JSON.stringify({ version: 99, source, streams: {} }), /newer costsync/],
        [JSON.stringify({ version: 0, source, streams: {} }), /state version 0, older than any this costsync can read/],
        [JSON.stringify({ version: 2, source: { ...source, name: 'other' }, streams: {} }), /belongs to another source/],
      ] as const) {
        writeFileSync(store.path, text);
        expect(() => store.load()).toThrow(ConfigError);
        expect(() => store.load()).toThrow(message);
      }
      expect(readFileSync(store.path, 'utf8')).toContain('other');
    });
  });

  it('on a full or read-only disk, fails naming the file and the fix, and keeps the last good state', async () => {
    await withTempDir(async (dir) => {
      const good = new StateStore(dir, source, WAREHOUSE);
      const state = {
        ...good.load(),
        streams: { line_items: { syncedFrom: '2025-06-01', syncedThrough: '2025-06-01', lastSuccessAt: null, pending: null } },
      };
      await good.saveAsync(state, () => new Date('2025-07-01T00:00:00Z'));
      for (const code of ['ENOSPC', 'EROFS']) {
        const failing = new StateStore(dir, source, WAREHOUSE, async () => {
          throw Object.assign(new Error(`${code}: cannot write`), { code });
        });
        const loaded = failing.load();
        const next = { ...loaded, streams: { line_items: { ...loaded.streams.line_items!, syncedThrough: '2025-06-30' } } };
        const error = await failing.saveAsync(next, () => new Date()).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'CS_ERR_STATE_IO', exitCode: 1 });
        expect((error as Error).message).toBe(`Cannot write the state file ${good.path}: ${code}: cannot write`);
        expect((error as { hint: string }).hint).toMatch(
          /--state-dir is writable and the disk is not full; the data already stored is kept/,
        );
      }
      expect(good.load().streams.line_items!.syncedThrough).toBe('2025-06-01');
    });
  });
});

describe('leftovers of a killed run', () => {
  it('a state file a killed writer left half-written (its temporary name) is removed; the state files stay', async () => {
    await withTempDir(async (dir) => {
      const state = `${dir}/${stateFileName('default', 'costs')}`;
      writeFileSync(state, '{}');
      writeFileSync(tmpName(state), '{"half');
      writeFileSync(`${state}.4242.tmp`, '{"half');
      removeStateLeftovers(dir);
      expect(readdirSync(dir)).toEqual([stateFileName('default', 'costs')]);
    });
  });
});
