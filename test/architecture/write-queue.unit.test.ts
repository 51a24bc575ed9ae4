import { describe, expect, it } from 'vitest';
import { writeQueue, type WriteQueue } from '../../src/storage/write-queue.js';

/** A connection that records its statements; `FAIL` aborts the open transaction, as a DuckDB runtime error does. */
function fakeConnection() {
  const ran: string[] = [];
  let aborted = false;
  return {
    ran,
    run: (text: string) => {
      ran.push(text);
      if (text === 'FAIL') aborted = true;
      if (text === 'FAIL' || (aborted && text === 'SELECT 1')) return Promise.reject(new Error(`${text} failed`));
      if (text === 'ROLLBACK') aborted = false;
      return Promise.resolve(undefined as never);
    },
  };
}

function queueOn(connection: ReturnType<typeof fakeConnection>): WriteQueue {
  return writeQueue(connection, { asError: (e) => e, publishMark: { text: 'MARK', params: [] } });
}

const exec = (q: WriteQueue, connection: ReturnType<typeof fakeConnection>, text: string) => q.statement(() => connection.run(text));

describe('the write queue (storage/write-queue.ts)', () => {
  it('runs the work after a group commit before any of its transactions is told it committed (a caller may close the warehouse at once)', async () => {
    const connection = fakeConnection();
    const q = writeQueue(connection, {
      asError: (e) => e,
      publishMark: { text: 'MARK', params: [] },
      afterGroupCommit: async () => {
        await q.statement(() => connection.run('AFTER'));
      },
    });
    const heard: string[] = [];
    const stores = ['A', 'B'].map((name) =>
      q
        .transactionMayRepeat(async () => {
          await q.statement(() => connection.run(`INSERT ${name}`));
        })
        .then(() => heard.push(`${name} told; statements so far: ${connection.ran.join(', ')}`)),
    );
    await Promise.all(stores);
    expect(heard).toEqual([
      'A told; statements so far: BEGIN TRANSACTION, INSERT A, INSERT B, MARK, COMMIT, AFTER',
      'B told; statements so far: BEGIN TRANSACTION, INSERT A, INSERT B, MARK, COMMIT, AFTER',
    ]);
  });

  it("a failed transaction's later statements fail instead of running outside it; another caller's statement meanwhile runs", async () => {
    const connection = fakeConnection();
    const q = queueOn(connection);
    let failed!: () => void;
    const hasFailed = new Promise<void>((resolve) => (failed = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const tx = q.transaction(async () => {
      await exec(q, connection, 'FAIL').catch(() => undefined);
      failed();
      await released;
      await exec(q, connection, 'OWN WRITE');
    });
    const settled = tx.then(
      () => 'committed',
      () => 'failed',
    );
    await hasFailed;
    // Another source's read, from outside the transaction while it is still open.
    await exec(q, connection, 'OTHER READ');
    release();
    expect(await settled).toBe('failed');
    expect(connection.ran).toContain('OTHER READ');
    expect(connection.ran).not.toContain('OWN WRITE');
    expect(connection.ran).not.toContain('COMMIT');
  });

  it("a transaction of one queue inside another's body: each queue knows its own statements", async () => {
    const a = fakeConnection();
    const b = fakeConnection();
    const qa = queueOn(a);
    const qb = queueOn(b);
    const inner = qa.transaction(async () => {
      await qb.transaction(async () => {
        await exec(qb, b, 'B WRITE');
        await exec(qa, a, 'FAIL').catch(() => undefined);
        // Still the outer transaction's own statement: it fails rather than run on its own.
        await expect(exec(qa, a, 'A WRITE')).rejects.toThrow();
      });
    });
    await expect(inner).rejects.toThrow();
    expect(b.ran).toEqual(['BEGIN TRANSACTION', 'B WRITE', 'MARK', 'COMMIT']);
    expect(a.ran).not.toContain('A WRITE');
  });
});
