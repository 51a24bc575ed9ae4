/**
 * The one registry of the `COSTSYNC_*` environment variables costsync reads: each setting's own
 * (`COSTSYNC_<NAME>`, from settings.ts), the others below, and the tests' own (so a test run is not
 * warned about). docs/reference/settings.md is written from it, a test checks that every name src/ and
 * test/ read is in it, and a variable not in it is warned about at start-up with the name it is closest to.
 */
import { closest } from './did-you-mean.js';
import { SETTING_SPECS, envName } from './settings.js';

export interface EnvVariable {
  name: `COSTSYNC_${string}`;
  describe: string;
}

/** Variables costsync reads that are not settings (settings each have their own COSTSYNC_<NAME>). */
export const OTHER_VARIABLES: readonly EnvVariable[] = [
  { name: 'COSTSYNC_API_KEY', describe: 'The API key (or put it alone in a file and pass `--api-key-file`); there is no flag for it.' },
  {
    name: 'COSTSYNC_DUCKDB_MEMORY_LIMIT',
    describe:
      "DuckDB's memory limit for runs that write the warehouse, as a DuckDB size (`256MB`, `1GB`); default and least `64MB`. A value that is not a size, or under 64MB, is refused with exit 2.",
  },
  {
    name: 'COSTSYNC_CATALOG_TOKEN',
    describe:
      'With `--catalog`: a bearer token sent as it is on every catalog request (a secret, never logged). One way only: not with `COSTSYNC_CATALOG_CREDENTIAL` or `--catalog-sigv4`.',
  },
  {
    name: 'COSTSYNC_CATALOG_CREDENTIAL',
    describe: 'With `--catalog`: `client_id:client_secret`, exchanged for OAuth2 tokens at `--catalog-oauth-uri` (a secret, never logged).',
  },
  { name: 'COSTSYNC_DUCKDB_THREADS', describe: 'DuckDB threads for runs that write the warehouse, 1 to 64; default 1.' },
  { name: 'COSTSYNC_PUSH_MEMORY_LIMIT', describe: "DuckDB's memory limit while `push` reads and checks files; default `256MB`." },
  { name: 'COSTSYNC_S3_PART_SIZE', describe: 'Part size of multipart uploads to a bucket, in bytes, at least 5 MiB; default 8 MiB.' },
  {
    name: 'COSTSYNC_CACHE_DIR',
    describe:
      'Where `query`, `verify`, `report` and `status` keep downloads of an `s3://` warehouse; default `$XDG_CACHE_HOME/costsync` or `~/.cache/costsync`.',
  },
  { name: 'COSTSYNC_FAILPOINT', describe: 'Tests only: `NAME:N` makes the process kill itself at the Nth pass of a named crash point.' },
];

/** The test suite's own variables (docs/testing.md): costsync itself ignores them, and does not warn about them. */
export const TEST_VARIABLES: readonly EnvVariable[] = [
  {
    name: 'COSTSYNC_MODEL_SEED',
    describe: "The model-based test's seed (`random` explores); given, `npm test` runs it instead of its fixed seeds.",
  },
  {
    name: 'COSTSYNC_MODEL_LENGTH',
    describe: 'The model-based test in `npm test`, with COSTSYNC_MODEL_SEED: the sequence length (default 12).',
  },
  {
    name: 'COSTSYNC_MODEL_NO_BUCKET',
    describe: 'The model-based test: `1` runs it without the bucket lake when no radosgw runs (CI never sets it).',
  },
  { name: 'COSTSYNC_MODEL_PATH', describe: 'The model-based test: replays one failing path.' },
  { name: 'COSTSYNC_MODEL_REPLAY', describe: 'The model-based test: replays one failing sequence.' },
  { name: 'COSTSYNC_MODEL_SECONDS', describe: 'The model-based test in the slow tier: how long it runs.' },
  { name: 'COSTSYNC_MODEL_LAKES', describe: 'The model-based test: `0` leaves the lakes out.' },
  { name: 'COSTSYNC_PUSH_MODEL_SEED', describe: "The push model-based test's seed (`random` explores)." },
  { name: 'COSTSYNC_PUSH_MODEL_PATH', describe: 'The push model-based test: replays one failing path.' },
  { name: 'COSTSYNC_PUSH_MODEL_SECONDS', describe: 'The push model-based test: how long it runs at most.' },
  { name: 'COSTSYNC_PUSH_MODEL_RUNS', describe: 'The push model-based test in `npm test`: how many sequences it runs (default 6).' },
  { name: 'COSTSYNC_KILLS', describe: 'Kill tests: how many kill points.' },
  { name: 'COSTSYNC_KILL_SEED', describe: 'Kill tests: the seed that places the kills.' },
  { name: 'COSTSYNC_SLOW_TIER', describe: 'Set to `1` by the slow tier: the kill tests take more points.' },
  { name: 'COSTSYNC_CHAOS_SEED', describe: 'The chaos test: its seed.' },
  { name: 'COSTSYNC_CHAOS_SECONDS', describe: 'The chaos test: how long it runs.' },
  { name: 'COSTSYNC_CHAOS_PAIRS', describe: 'The chaos test: how many pairs of runners.' },
  { name: 'COSTSYNC_LOST_STRIDE', describe: 'The lost-answers test: every how many requests an answer is lost.' },
  { name: 'COSTSYNC_CATALOG_KILL_SECONDS', describe: 'The catalog kill test: how long each loop runs.' },
  { name: 'COSTSYNC_CHROMIUM', describe: "The report's browser test: the Chromium to drive." },
];

const PREFIX = 'COSTSYNC_';

/** Every COSTSYNC_* variable in the registry. */
export function knownVariables(): string[] {
  return [...SETTING_SPECS.map((s) => envName(s.name)), ...OTHER_VARIABLES.map((v) => v.name), ...TEST_VARIABLES.map((v) => v.name)];
}

/** The `COSTSYNC_*` variables of `env` costsync does not read, each with the known one it is closest to (or null). Pure. */
export function unknownVariables(env: NodeJS.ProcessEnv): { name: string; meant: string | null }[] {
  const known = knownVariables();
  // Compared without the prefix they all share, so "close enough" is judged on the part a person typed.
  const tails = known.map((k) => k.slice(PREFIX.length));
  return Object.keys(env)
    .filter((name) => name.startsWith(PREFIX) && !known.includes(name))
    .sort()
    .map((name) => {
      const meant = closest(name.slice(PREFIX.length), tails);
      return { name, meant: meant === null ? null : `${PREFIX}${meant}` };
    });
}

/** The warning for one unknown variable. Pure. */
export function unknownVariableText(v: { name: string; meant: string | null }): string {
  return `${v.name} is not a variable costsync reads, so it is ignored${v.meant === null ? '' : ` (did you mean ${v.meant}?)`}; see docs/reference/settings.md.`;
}
