import { describe, expect, it } from 'vitest';
import { FAILPOINTS, parseFailpoint } from '../../src/failpoints.js';

describe('failpoints', () => {
  it('reads NAME:N for the points it knows', () => {
    expect(parseFailpoint('publish:2')).toEqual({ name: 'publish', at: 2, stop: false });
    expect(parseFailpoint('lake-put:3:stop')).toEqual({ name: 'lake-put', at: 3, stop: true });
    for (const name of Object.keys(FAILPOINTS)) expect(parseFailpoint(`${name}:1`)?.name).toBe(name);
  });

  it('ignores what is unset, unknown or malformed: a typo never kills a run', () => {
    for (const text of [undefined, '', 'publish', 'publish:0', 'nowhere:1', 'publish:x', ' publish:1', 'publish:1:kill'])
      expect(parseFailpoint(text)).toBeNull();
  });
});
