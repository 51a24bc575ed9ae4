// Issue 52 row 14: the defaults and limits the docs state are one table read from the code
// (docs/reference/limits.md), and the prose pages that state a limit say the code's value.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FIRST_RUN_DAYS, resolveSyncConfig } from '../../src/config.js';
import { leastDuration, limits } from '../../src/limits.js';
import { DEFAULT_RETENTION_MS } from '../../src/outputs/iceberg.js';
import { DEFAULT_RECHECK_DAYS } from '../../src/plan/horizon.js';
import { SETTING_SPECS, parseDuration, specOf, type SettingSpec } from '../../src/settings.js';
import { SOURCES_PER_CORE } from '../../src/settings.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A page's text with its line breaks and runs of spaces as one space: prose wraps anywhere. */
const page = (path: string) => readFileSync(join(ROOT, path), 'utf8').replace(/\s+/g, ' ');

describe('the one table of defaults and limits', () => {
  it('holds every setting and every built-in limit once', () => {
    const table = limits();
    const whats = table.map((l) => l.what);
    expect(new Set(whats).size).toBe(whats.length);
    for (const spec of SETTING_SPECS as readonly SettingSpec[])
      if (spec.default !== undefined || spec.range !== undefined)
        expect(whats).toContain(`--${spec.name} (COSTSYNC_${spec.name.toUpperCase().replaceAll('-', '_')})`);
    expect(table.length).toBeGreaterThan(50);
  });

  it('each limit a prose page states is stated there with the value the code has', () => {
    const missing = limits().flatMap((l) =>
      (l.stated ?? []).filter((s) => !page(s.page).includes(s.text)).map((s) => `${s.page}: "${s.text}"`),
    );
    expect(missing).toEqual([]);
    expect(limits().filter((l) => l.stated !== undefined).length).toBeGreaterThanOrEqual(5);
  });

  it('a duration documented as taking 0 takes it, and one documented with a least refuses 0 (--max-runtime)', () => {
    const env = { COSTSYNC_API_KEY: 'k', COSTSYNC_BASE_URL: 'https://api.example.com' };
    const durations = (SETTING_SPECS as readonly SettingSpec[]).filter((s) => s.kind === 'duration');
    const settingsPage = page('docs/reference/settings.md');
    const zeroList = /`0` alone, meaning at once, only where a setting's least is 0 \(([^)]*)\)/.exec(settingsPage)?.[1];
    expect(zeroList).toBeDefined();
    for (const spec of durations) {
      const resolve = () => resolveSyncConfig({ flags: { [spec.name]: '0' }, env, file: {}, nowMs: Date.parse('2025-07-01T00:00:00Z') });
      const documentedZero = leastDuration(spec).startsWith('0');
      expect({ name: spec.name, listed: zeroList!.includes(`\`--${spec.name}\``) }).toEqual({ name: spec.name, listed: documentedZero });
      if (documentedZero) expect(resolve, spec.name).not.toThrow();
      else expect(resolve, spec.name).toThrow(new RegExp(`--${spec.name} must be a duration (of at least|.*\\(more than 0\\))`));
    }
    expect(leastDuration(specOf('max-runtime'))).toBe('1ms');
  });

  it("the settings' defaults written as text say the constants the code uses", () => {
    expect(specOf('start-date').defaultText).toBe(`${FIRST_RUN_DAYS} days before today`);
    expect(specOf('recheck-days').defaultText).toMatch(new RegExp(`^${DEFAULT_RECHECK_DAYS}, `));
    expect(specOf('sources-at-once').defaultText).toContain(`${SOURCES_PER_CORE} a CPU core`);
    expect(parseDuration(String(specOf('iceberg-retention').default))).toBe(DEFAULT_RETENTION_MS);
  });
});
