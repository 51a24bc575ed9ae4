import { describe, expect, it } from 'vitest';
import { COMPACT_FREE_RATIO, COMPACT_MIN_FREE_BYTES, shouldCompact } from '../../src/outputs/publish.js';

const BLOCK = 262_144;
const blocks = (bytes: number) => Math.ceil(bytes / BLOCK);

describe('when a publish compacts the working copy', () => {
  it('past the share of free blocks, once they hold the least worth a rewrite', () => {
    const free = blocks(COMPACT_MIN_FREE_BYTES);
    // Just past the share: a little under free / ratio blocks in all.
    const total = Math.floor(free / COMPACT_FREE_RATIO) - 1;
    expect(shouldCompact({ total_blocks: total, free_blocks: free, block_size: BLOCK })).toBe(true);
    // The same share of a small file: a few blocks its run records freed.
    expect(shouldCompact({ total_blocks: 12, free_blocks: 6, block_size: BLOCK })).toBe(false);
    expect(shouldCompact({ total_blocks: total, free_blocks: free - 1, block_size: BLOCK })).toBe(false);
    // Enough bytes, too small a share.
    expect(shouldCompact({ total_blocks: free * 10, free_blocks: free, block_size: BLOCK })).toBe(false);
    expect(shouldCompact({ total_blocks: 0, free_blocks: 0, block_size: BLOCK })).toBe(false);
    expect(shouldCompact(undefined)).toBe(false);
  });
});
