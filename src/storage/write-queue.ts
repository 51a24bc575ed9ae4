/**
 * The warehouse's one connection, shared by every source: statements go one at a time, transactions
 * one at a time (grouped ones sharing a commit), and a transaction DuckDB aborted is rolled back at
 * once. The connection is given; the warehouse (duckdb.ts) builds its SQL on `statement`.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { CostsyncError } from '../errors.js';
import { failpoint } from '../failpoints.js';

export interface TransactionOptions {
  /** false: bookkeeping readers need not see at once (the published file is not marked behind). */
  publish?: boolean;
}

/**
 * The body of a transaction that may share one commit with other such bodies waiting for the queue at
 * the same time (a group commit, at most `MAX_GROUP` of them; see `transactionMayRepeat`). Should the
 * shared one fail, it is rolled back and each body RUNS AGAIN on its own, so a failure is only its own:
 * whatever a body keeps outside the warehouse must be undone by an `onSettle` hook told of the rollback.
 */
export type BodyMayRunTwice<T> = () => Promise<T>;

/**
 * Grouped transactions sharing one commit, at most. Eight one-day windows of 30,000 rows pass a row
 * group; a group that fails is run again one by one, so it stays small.
 */
export const MAX_GROUP = 8;

/**
 * The error a transaction's statement gets once the transaction was rolled back after `cause`, as
 * `known` says it (`asError`: DuckDB's out-of-memory as costsync's, with its code and fix); any other
 * failure is one of writing the working copy.
 */
function rolledBack(cause: unknown, known: unknown): CostsyncError {
  const message = `the transaction was rolled back after a statement failed: ${(known as Error)?.message?.split('\n')[0] ?? String(known)}`;
  if (known instanceof CostsyncError) return new CostsyncError(known.code, message, { exitCode: known.exitCode, hint: known.hint, cause });
  return new CostsyncError('CS_ERR_STATE_IO', message, {
    hint: 'Nothing of the transaction was stored, and the next run does its work again. Should it keep failing, check the disk under --state-dir (space, permissions).',
    cause,
  });
}

/**
 * A queue that runs the tasks given to it one at a time, in order, each once the one before has
 * settled. Chained promises, no timers: Bottleneck's scheduling added a delay to each transaction,
 * and with many sources a run's transactions wait for each other.
 */
export function serially(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(task: () => Promise<T>): Promise<T> => {
    const next = tail.then(task, task);
    tail = next.catch(() => undefined);
    return next;
  };
}

export interface WriteQueueOptions {
  /** The error a failed statement's caller gets (DuckDB's out-of-memory as costsync's, say). */
  asError: (error: unknown) => unknown;
  /** Run at the end of every transaction but `publish: false` ones: the published file is now behind. */
  publishMark: { text: string; params: DuckDBValue[] };
  /**
   * Run in the queue's turn after grouped transactions (window stores) commit, outside any
   * transaction: the warehouse checkpoints there when committed rows crowd DuckDB's memory.
   */
  afterGroupCommit?: () => Promise<void>;
}

export interface WriteQueue {
  /** Runs one statement of the connection in its turn (see the rollback below). */
  statement: <T>(run: () => Promise<T>) => Promise<T>;
  transaction: <T>(fn: () => Promise<T>, options?: TransactionOptions) => Promise<T>;
  /**
   * A transaction that may share its commit with others (see `BodyMayRunTwice`). Window stores: together
   * they pass DuckDB's 122,880-row row group, so their rows go straight to the database file instead of
   * the WAL first and the checkpoint after.
   */
  transactionMayRepeat: <T>(body: BodyMayRunTwice<T>, options?: TransactionOptions) => Promise<T>;
  onSettle: (fn: (committed: boolean) => void) => void;
  exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
  afterQueued: <T>(fn: () => Promise<T>) => Promise<T>;
}

/**
 * The open transaction's own statements, by async context: one instance for every queue. Before Node 24,
 * each live instance is visited on every promise the process creates, and an instance lives until
 * disabled: one a queue made every await slower with each warehouse opened (200,000 awaits took 3.6 s
 * with 100 instances on Node 22, 0.1 s with one). Its store maps each queue to its transaction.
 */
const ownStatements = new AsyncLocalStorage<ReadonlyMap<object, object>>();

export function writeQueue(connection: Pick<DuckDBConnection, 'run'>, options: WriteQueueOptions): WriteQueue {
  // Transactions (and exclusive work) one at a time: a connection has one transaction.
  const queue = serially();
  // One statement at a time goes to DuckDB: statements on one connection run one after another anyway,
  // and each one handed over waits for the connection on a libuv thread, which file writes need too.
  // With hundreds of sources, 400 statements were in flight at once; here they wait in JavaScript.
  const one = serially();
  /**
   * The transaction open on the connection, if any: its own statements run in `inTransaction`'s
   * context (`ownStatements`), and `failure` is set once DuckDB aborted it and it was rolled back.
   */
  let open: { failure: unknown } | null = null;
  /**
   * Runs one statement in its turn. A runtime error aborts DuckDB's open transaction, whoever's
   * statement it was (other sources' reads run between a transaction's statements): it is rolled back
   * at once, so the statements queued behind run on their own instead of failing with DuckDB's
   * "Current transaction is aborted", and the transaction's later statements fail instead of running
   * outside it.
   */
  const statement = <T>(run: () => Promise<T>): Promise<T> =>
    one(async () => {
      const tx = open;
      const own = tx !== null && ownStatements.getStore()?.get(queue) === tx;
      if (own && tx.failure !== null) throw rolledBack(tx.failure, options.asError(tx.failure));
      try {
        return await run();
      } catch (error) {
        if (tx !== null && tx === open && tx.failure === null && !(await stillOpen())) {
          tx.failure = error;
          await connection.run('ROLLBACK').catch(() => undefined);
        }
        throw options.asError(error);
      }
    });
  /** Whether DuckDB's open transaction survived a failed statement (a binder error leaves it open). */
  const stillOpen = () =>
    connection.run('SELECT 1').then(
      () => true,
      () => false,
    );
  const exec = (text: string, params?: DuckDBValue[]) => statement(() => connection.run(text, params));

  let settleHooks: ((committed: boolean) => void)[] = [];
  /** Runs `fns` in one transaction, in order; their results, or the first failure after a rollback. */
  const inTransaction = async (fns: readonly (() => Promise<unknown>)[], publish: boolean): Promise<unknown[]> => {
    await exec('BEGIN TRANSACTION');
    const tx = { failure: null as unknown };
    open = tx;
    let committed = false;
    try {
      return await ownStatements.run(new Map(ownStatements.getStore()).set(queue, tx), async () => {
        const results: unknown[] = [];
        for (const fn of fns) results.push(await fn());
        if (publish) await exec(options.publishMark.text, options.publishMark.params);
        await exec('COMMIT');
        committed = true;
        failpoint('commit');
        return results;
      });
    } catch (error) {
      if (tx.failure === null) await one(() => connection.run('ROLLBACK')).catch(() => undefined);
      throw error;
    } finally {
      open = null;
      const hooks = settleHooks;
      settleHooks = [];
      for (const hook of hooks) hook(committed);
    }
  };
  /** Grouped transactions waiting for the queue (see `transactionMayRepeat`). */
  const grouped: { fn: BodyMayRunTwice<unknown>; publish: boolean; resolve: (value: unknown) => void; reject: (error: unknown) => void }[] =
    [];
  const runGroup = async (): Promise<void> => {
    const jobs = grouped.splice(0, MAX_GROUP);
    if (grouped.length > 0) void queue(runGroup);
    const outcomes = await commitGroup(jobs);
    // Before the callers hear of their commit: one may close the warehouse at once, under a statement
    // still running. Its failure is the warehouse's to report at the next statement, not the stored windows'.
    await options.afterGroupCommit?.().catch(() => undefined);
    jobs.forEach((job, i) => {
      const outcome = outcomes[i]!;
      if (outcome.status === 'fulfilled') job.resolve(outcome.value);
      else job.reject(outcome.reason);
    });
  };
  const commitGroup = async (jobs: typeof grouped): Promise<PromiseSettledResult<unknown>[]> => {
    if (jobs.length > 1) {
      try {
        const results = await inTransaction(
          jobs.map((j) => j.fn),
          jobs.some((j) => j.publish),
        );
        return results.map((value) => ({ status: 'fulfilled', value }));
      } catch {
        // Rolled back: each runs again on its own below, so a failure is only its own.
      }
    }
    const outcomes: PromiseSettledResult<unknown>[] = [];
    for (const job of jobs) {
      try {
        outcomes.push({ status: 'fulfilled', value: (await inTransaction([job.fn], job.publish))[0] });
      } catch (reason) {
        outcomes.push({ status: 'rejected', reason });
      }
    }
    return outcomes;
  };

  return {
    statement,
    transaction: <T>(fn: () => Promise<T>, txOptions?: TransactionOptions) =>
      queue(async () => (await inTransaction([fn], txOptions?.publish !== false))[0] as T),
    transactionMayRepeat: <T>(body: BodyMayRunTwice<T>, txOptions?: TransactionOptions) =>
      new Promise<T>((resolve, reject) => {
        grouped.push({ fn: body, publish: txOptions?.publish !== false, resolve: resolve as (value: unknown) => void, reject });
        if (grouped.length === 1) void queue(runGroup);
      }),
    onSettle: (fn) => {
      settleHooks.push(fn);
    },
    exclusive: (fn) => queue(fn),
    afterQueued: (fn) => one(async () => undefined).then(fn),
  };
}
