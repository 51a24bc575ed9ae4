import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openWarehouse, type Warehouse } from '../../src/storage/duckdb.js';
import { MAX_GROUP } from '../../src/storage/write-queue.js';
import { withTempDir } from '../support/helpers.js';

/** A warehouse in a temp dir with a table `t (n INTEGER)`, closed however the test ends. */
async function withTable(fn: (wh: Warehouse) => Promise<void>): Promise<void> {
  await withTempDir(async (dir) => {
    const wh = await openWarehouse(join(dir, 'g.duckdb'));
    try {
      await wh.sql('CREATE TABLE t (n INTEGER)');
      await fn(wh);
    } finally {
      wh.close();
    }
  });
}

/** Holds the write queue until `release` is called, so the transactions given meanwhile wait together. */
function holdQueue(wh: Warehouse): { release: () => void; held: Promise<void> } {
  let release: () => void = () => undefined;
  const open = new Promise<void>((resolve) => {
    release = resolve;
  });
  return { release, held: wh.exclusive(() => open) };
}

const txid = async (wh: Warehouse) => Number((await wh.sql<{ t: number }>('SELECT txid_current() AS t'))[0]!.t);

describe('grouped transactions (a group commit of the window stores waiting together)', () => {
  it('share one transaction when they wait for the queue together, each getting its own result', async () => {
    await withTable(async (wh) => {
      const { release, held } = holdQueue(wh);
      const stores = [1, 2, 3].map((n) =>
        wh.transactionMayRepeat(async () => {
          await wh.sql('INSERT INTO t VALUES ($1)', [n]);
          return { n, tx: await txid(wh) };
        }),
      );
      release();
      await held;
      const results = await Promise.all(stores);
      expect(results.map((r) => r.n)).toEqual([1, 2, 3]);
      expect(new Set(results.map((r) => r.tx)).size).toBe(1);
      expect(await wh.sql('SELECT n FROM t ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      // One waiting alone has its own.
      const alone = await wh.transactionMayRepeat(async () => txid(wh));
      expect(alone).not.toBe(results[0]!.tx);
    });
  });

  it('keep a failure to its own: the group rolls back, the others commit on their own, the failed one rejects', async () => {
    await withTable(async (wh) => {
      const { release, held } = holdQueue(wh);
      const runs: number[] = [];
      const stores = [1, 2, 3].map((n) =>
        wh.transactionMayRepeat(async () => {
          runs.push(n);
          await wh.sql('INSERT INTO t VALUES ($1)', [n]);
          if (n === 2) throw new Error('window 2 cannot be stored');
          return n;
        }),
      );
      release();
      await held;
      const settled = await Promise.allSettled(stores);
      expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((settled[1] as PromiseRejectedResult).reason.message).toBe('window 2 cannot be stored');
      // Once together (1, 2 failed), then each alone.
      expect(runs).toEqual([1, 2, 1, 2, 3]);
      expect(await wh.sql('SELECT n FROM t ORDER BY n')).toEqual([{ n: 1 }, { n: 3 }]);
    });
  });

  it('tell onSettle hooks whether their transaction committed or rolled back, the failed group included', async () => {
    await withTable(async (wh) => {
      const events: string[] = [];
      const { release, held } = holdQueue(wh);
      const stores = [1, 2].map((n) =>
        wh.transactionMayRepeat(async () => {
          wh.onSettle((committed) => events.push(`${committed ? 'committed' : 'rolled back'} ${n}`));
          events.push(`stored ${n}`);
          if (n === 2 && events.filter((e) => e === 'stored 2').length === 1) throw new Error('first try fails');
          return n;
        }),
      );
      release();
      await held;
      await Promise.allSettled(stores);
      expect(events).toEqual([
        'stored 1',
        'stored 2',
        'rolled back 1',
        'rolled back 2', // the group
        'stored 1',
        'committed 1', // 1 alone
        'stored 2',
        'committed 2', // 2 alone: its second try
      ]);
      expect(await Promise.all(stores)).toEqual([1, 2]);
    });
  });

  it(`take at most ${MAX_GROUP} at a time; the rest follow in further groups`, async () => {
    await withTable(async (wh) => {
      const { release, held } = holdQueue(wh);
      const count = MAX_GROUP * 2 + 1;
      const stores = Array.from({ length: count }, (_, n) =>
        wh.transactionMayRepeat(async () => {
          await wh.sql('INSERT INTO t VALUES ($1)', [n]);
          return txid(wh);
        }),
      );
      release();
      await held;
      const ids = await Promise.all(stores);
      const sizes = [...ids.reduce((m, id) => m.set(id, (m.get(id) ?? 0) + 1), new Map<number, number>()).values()];
      expect(sizes).toEqual([MAX_GROUP, MAX_GROUP, 1]);
      expect(await wh.sql<{ n: number }>('SELECT count(*) AS n FROM t')).toEqual([{ n: count }]);
    });
  });
});

describe('a statement that fails while a transaction is open', () => {
  it("rolls the transaction back at once: another source's read queued behind it runs, and the transaction stores nothing", async () => {
    await withTable(async (wh) => {
      let fire: () => void = () => undefined;
      // Started outside the transaction, as another source's read is, and queued right behind the failing statement.
      const outside = new Promise<void>((resolve) => {
        fire = resolve;
      }).then(() => wh.sql<{ n: number }>('SELECT count(*) AS n FROM t'));
      const store = wh.transaction(async () => {
        await wh.sql('INSERT INTO t VALUES (1)');
        const failing = wh.sql("SELECT 'x'::INTEGER AS n");
        fire();
        await failing;
      });
      await expect(store).rejects.toThrow(/Could not convert string 'x'/);
      // Before: "Current transaction is aborted (please ROLLBACK)".
      expect(await outside).toEqual([{ n: 0 }]);
      expect(await wh.sql('SELECT n FROM t')).toEqual([]);
    });
  });

  it("fails the transaction when another's statement aborts it, and its later statements never run outside it", async () => {
    await withTable(async (wh) => {
      let fire: () => void = () => undefined;
      const outside = new Promise<void>((resolve) => {
        fire = resolve;
      }).then(() => wh.sql("SELECT 'y'::INTEGER AS n"));
      let afterwards: unknown = null;
      const store = wh.transaction(async () => {
        await wh.sql('INSERT INTO t VALUES (1)');
        fire();
        // Let the outside statement run (and fail) between this transaction's statements.
        await outside.catch(() => undefined);
        // A caller that swallows the failure and writes on: the write must not commit on its own.
        await wh.sql('INSERT INTO t VALUES (2)').catch((error: unknown) => {
          afterwards = error;
        });
      });
      await expect(outside).rejects.toThrow(/Could not convert string 'y'/);
      await expect(store).rejects.toThrow(/the transaction was rolled back after a statement failed: Conversion Error/);
      await expect(store).rejects.toMatchObject({
        code: 'CS_ERR_STATE_IO',
        hint: expect.stringMatching(/^Nothing of the transaction was stored/),
      });
      expect(String(afterwards)).toMatch(/the transaction was rolled back/);
      expect(await wh.sql('SELECT n FROM t')).toEqual([]);
    });
  });

  it("tells onSettle hooks that the transaction rolled back, its own statement or another's having aborted it", async () => {
    await withTable(async (wh) => {
      const settled: boolean[] = [];
      await expect(
        wh.transaction(async () => {
          wh.onSettle((committed) => settled.push(committed));
          await wh.sql('INSERT INTO t VALUES (1)');
          await wh.sql("SELECT 'x'::INTEGER AS n");
        }),
      ).rejects.toThrow(/Could not convert string 'x'/);
      let fire: () => void = () => undefined;
      const outside = new Promise<void>((resolve) => {
        fire = resolve;
      }).then(() => wh.sql("SELECT 'y'::INTEGER AS n"));
      // Aborted by another's statement while its own code goes on as if nothing happened.
      await expect(
        wh.transaction(async () => {
          wh.onSettle((committed) => settled.push(committed));
          await wh.sql('INSERT INTO t VALUES (2)');
          fire();
          await outside.catch(() => undefined);
        }),
      ).rejects.toThrow(/the transaction was rolled back/);
      await wh.transaction(async () => {
        wh.onSettle((committed) => settled.push(committed));
        await wh.sql('INSERT INTO t VALUES (3)');
      });
      expect(settled).toEqual([false, false, true]);
      expect(await wh.sql('SELECT n FROM t')).toEqual([{ n: 3 }]);
    });
  });

  it('leaves the transaction open after an error DuckDB does not abort it for (a binder error), so it can go on', async () => {
    await withTable(async (wh) => {
      const stored = await wh.transaction(async () => {
        await wh.sql('INSERT INTO t VALUES (1)');
        await wh.sql('SELECT * FROM no_such_table').catch(() => undefined);
        await wh.sql('INSERT INTO t VALUES (2)');
        return 'committed';
      });
      expect(stored).toBe('committed');
      expect(await wh.sql('SELECT n FROM t ORDER BY n')).toEqual([{ n: 1 }, { n: 2 }]);
    });
  });
});

describe('committed rows DuckDB holds in memory', () => {
  it('are checkpointed once past a quarter of the memory limit, so small window stores never fill it', async () => {
    await withTable(async (wh) => {
      const held = async () => Number((await wh.query<{ bytes: number }>('storage/in_memory_table_bytes'))[0]!.bytes);
      const limit = 64e6;
      let most = 0;
      // Commits far below a row group, as 400 sources' rollups windows are: DuckDB keeps their rows in
      // memory until a checkpoint: 60 of them held 39 MB of the 64 MB limit.
      for (let commit = 0; commit < 60; commit++) {
        await wh.transactionMayRepeat(() =>
          wh.sql(`INSERT INTO t SELECT i FROM range(${commit * 100_000}, ${(commit + 1) * 100_000}) r(i)`),
        );
        most = Math.max(most, await held());
      }
      expect(most).toBeGreaterThan(0);
      // At most a quarter of the limit, and one commit's rows past it.
      expect(most).toBeLessThan(limit / 4 + 2e6);
      expect(await wh.sql('SELECT count(*)::INTEGER AS n FROM t')).toEqual([{ n: 60 * 100_000 }]);
    });
  });
});
