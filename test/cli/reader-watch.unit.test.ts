import { describe, expect, it } from 'vitest';
import { pipesToWatch, readerGone, type StreamStat } from '../../src/reader-watch.js';

const stat = (which: 'stdout' | 'stderr', fifo: boolean, ino: number): StreamStat => ({
  which,
  fd: which === 'stdout' ? 1 : 2,
  fifo,
  dev: 7,
  ino,
});

describe('which pipes are watched for a reader going away', () => {
  it('one pipe carrying both streams (`2>&1 |`) is watched once, for both', () => {
    expect(pipesToWatch([stat('stdout', true, 5), stat('stderr', true, 5)])).toEqual([{ fd: 1, streams: ['stdout', 'stderr'] }]);
  });

  it('two pipes are watched each; a file, a terminal or a socket is not', () => {
    expect(pipesToWatch([stat('stdout', true, 5), stat('stderr', true, 6)])).toEqual([
      { fd: 1, streams: ['stdout'] },
      { fd: 2, streams: ['stderr'] },
    ]);
    expect(pipesToWatch([stat('stdout', false, 5), stat('stderr', true, 6)])).toEqual([{ fd: 2, streams: ['stderr'] }]);
    expect(pipesToWatch([stat('stdout', false, 5), stat('stderr', false, 6)])).toEqual([]);
  });

  it('only a watch killed by SIGPIPE means the reader went; a tail that cannot watch here means nothing', () => {
    expect(readerGone('SIGPIPE')).toBe(true);
    expect(readerGone(null)).toBe(false);
    expect(readerGone('SIGTERM')).toBe(false);
  });
});
