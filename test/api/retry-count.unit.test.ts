import { describe, expect, it } from 'vitest';
import { retryLine, withRetries, type ClientEvent, type ClientStats } from '../../src/api/client.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from '../../src/api/resilience.js';
import { ApiError } from '../../src/errors.js';

type Answer = 500 | 429 | 200;

const failure = (status: Answer) =>
  status === 429
    ? new ApiError('CS_ERR_RATE_LIMITED', 'HTTP 429', { path: '/line-items', statusCode: 429, retryAfterMs: 0 })
    : new ApiError('CS_ERR_SERVER', 'HTTP 500', { path: '/line-items', statusCode: 500 });

/**
 * Runs withRetries against scripted answers (the last repeats), with no waits between attempts, and
 * returns what happened in order: each request sent with its number, each retry line, and the error.
 */
async function run(answers: Answer[], policy: Partial<RetryPolicy>) {
  const steps: string[] = [];
  const events: ClientEvent[] = [];
  const stats: ClientStats = { requests: 0, retries: 0, rateLimited: 0 };
  let sent = 0;
  let error: ApiError | undefined;
  try {
    await withRetries(
      async () => {
        sent += 1;
        steps.push(`send ${sent}`);
        const status = answers[Math.min(sent, answers.length) - 1]!;
        if (status === 200) return 'page';
        throw failure(status);
      },
      {
        method: 'GET',
        where: '/line-items',
        policy: { ...DEFAULT_RETRY_POLICY, minTimeoutMs: 0, maxTimeoutMs: 0, ...policy },
        stop: undefined,
        stats,
        emit: (event) => {
          events.push(event);
          if (event.type === 'retry') steps.push(retryLine(event));
        },
        holdFor: () => {},
      },
    );
  } catch (caught) {
    error = caught as ApiError;
  }
  return { steps, events, stats, sent, error };
}

/** Every retry line names the number of the request sent right after it. */
function expectLinesMatchSends(steps: string[]) {
  steps.forEach((step, i) => {
    const named = /\(attempt (\d+)/.exec(step);
    if (named) expect(steps[i + 1]).toBe(`send ${named[1]}`);
  });
}

describe('attempts are counted the same everywhere (issue 52 row 6)', () => {
  it('with the default policy, the last retry line and the final error both say 7 attempts, as 7 requests were sent', async () => {
    const { steps, events, stats, sent, error } = await run([500], {});
    expect(sent).toBe(7);
    expect(error?.code).toBe('CS_ERR_RETRIES_EXHAUSTED');
    expect(error?.message).toMatch(/still failing after 7 attempts/);
    const retries = events.filter((e) => e.type === 'retry');
    expect(retries.map((e) => e.attempt)).toEqual([2, 3, 4, 5, 6, 7]);
    expect(retries.map((e) => e.retriesLeft)).toEqual([5, 4, 3, 2, 1, 0]);
    expect(stats.retries).toBe(6);
    // The last line is the one before the 7th request, and nothing claims an 8th.
    expect(steps.at(-2)).toBe('retrying GET /line-items (attempt 7, the last attempt): HTTP 500');
    expect(steps.at(-1)).toBe('send 7');
    expect(steps.join('\n')).not.toMatch(/attempt 8/);
    expectLinesMatchSends(steps);
  });

  it('counts 429s among the requests sent, though they do not use up retries', async () => {
    const { steps, events, sent, error } = await run([500, 429, 500, 429, 500], { retries: 3 });
    // 429s are not retries: three 500s use up 3 retries, so the 4th 500 (the 6th request) ends it.
    expect(sent).toBe(6);
    expect(error?.message).toMatch(/still failing after 6 attempts/);
    expect(events.filter((e) => e.type === 'rate_limited')).toHaveLength(2);
    expect(events.flatMap((e) => (e.type === 'retry' ? [e.attempt] : []))).toEqual([2, 4, 6]);
    expect(steps.at(-2)).toBe('retrying GET /line-items (attempt 6, the last attempt): HTTP 500');
    expectLinesMatchSends(steps);
  });

  it('a request that succeeds after retries emits one retry event per request sent again', async () => {
    const { steps, stats, sent, error } = await run([500, 500, 200], {});
    expect(error).toBeUndefined();
    expect(sent).toBe(3);
    expect(stats.retries).toBe(2);
    expect(steps).toEqual([
      'send 1',
      'retrying GET /line-items (attempt 2, 5 more attempt(s) before giving up): HTTP 500',
      'send 2',
      'retrying GET /line-items (attempt 3, 4 more attempt(s) before giving up): HTTP 500',
      'send 3',
    ]);
  });
});
