// Writes the reference pages of docs/reference/ from the code that defines what they describe: the
// settings (SETTING_SPECS), every command's own flags (read from its yargs options), and the error and
// exit codes (ERRORS, ExitCode). Run after a build: `npm run docs`. `--check` writes nothing and exits 1,
// naming the pages, when a committed page differs from what would be written now (a test runs it).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SETTING_SPECS, envName, settingOptions } from '../dist/settings.js';
import { ERRORS, ExitCode } from '../dist/errors.js';
import { OTHER_VARIABLES as COSTSYNC_VARIABLES, TEST_VARIABLES } from '../dist/env-vars.js';
import { leastDuration, limits } from '../dist/limits.js';
import { runCli } from '../dist/cli-app.js';
import { checkOptions } from '../dist/commands/check.js';
import { emulatorOptions } from '../dist/commands/emulator.js';
import { emulatorChangeOptions } from '../dist/commands/emulator-change.js';
import { notifyOptions } from '../dist/commands/notify.js';
import { pushOptions, pushOtelOptions } from '../dist/commands/push.js';
import { queryOptions } from '../dist/commands/query.js';
import { exportOptions } from '../dist/commands/export.js';
import { reportOptions } from '../dist/commands/report.js';
import { statusOptions } from '../dist/commands/status.js';
import { syncOptions } from '../dist/commands/sync.js';
import { verifyOptions } from '../dist/commands/verify.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const FIX = 'npm run docs';
const HEADER = `<!-- Written by docs/generate.mjs from the code; edit the code and run \`${FIX}\`, not this page. -->`;

/** Each command's options function, by the name `costsync --help` lists it under (checked against it below). */
const COMMAND_OPTIONS = {
  sync: syncOptions,
  push: pushOptions,
  'push-otel': pushOtelOptions,
  query: queryOptions,
  export: exportOptions,
  verify: verifyOptions,
  report: reportOptions,
  notify: notifyOptions,
  status: statusOptions,
  check: checkOptions,
  emulator: emulatorOptions,
  demo: (y) => y,
};

/** Each command's own commands' options, by their names in `costsync <command> --help` (checked against it below). */
const SUBCOMMAND_OPTIONS = {
  emulator: { change: emulatorChangeOptions },
};

/** What each exit code means: the one text of it (the errors that take each come from ERRORS). */
const EXIT_MEANINGS = {
  OK: 'done',
  FAILED:
    'failed: the API or the network kept failing, the server sent bad data, a file could not be read or written, or an output (the lake, the published warehouse) fell behind; progress is saved. For `push`, rows that failed the checks; for `verify`, a difference',
  USAGE:
    'usage or configuration: a bad flag, value or file; a date after today; for `verify`, dates of which the warehouse holds none synced (nothing was compared); a host that does not resolve or refuses connections before anything answered; a missing bucket; a bucket server that ignores conditional writes. The message names it and the fix',
  AUTH: 'authentication, plan or scope: the API refused the key (unauthorized, forbidden, scope, plan); no AWS credentials, or the bucket refused an action (named)',
  STOPPED_EARLY:
    'stopped early with progress saved (`--max-runtime`, SIGTERM, SIGINT, a closed output pipe during a sync): run again to go on',
  LOCKED:
    "another run holds the lock or the lease (named); a run lost its lease or found the published warehouse replaced by another run; or another program opened costsync's working copy (never for a reader of `--db`)",
};

/** Variables costsync reads that are not settings: its own (src/env-vars.ts, the one registry of them), then others'. */
const OTHER_VARIABLES = [
  ...COSTSYNC_VARIABLES.map((v) => [v.name, v.describe]),
  [
    'AWS_REGION, AWS_PROFILE',
    "The bucket's region (required; any value for servers that ignore it) and the shared-config profile, as the AWS SDK reads them.",
  ],
  [
    'AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY',
    "Credentials, or any other source of the AWS SDK's default chain (SSO, web identity, container and instance metadata).",
  ],
  ['AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL', 'Another S3-compatible server (MinIO, Ceph, R2, GCS), addressed path-style.'],
  ['UV_THREADPOOL_SIZE', 'libuv threads; the executable sets 2 unless this is set, so file I/O goes on while DuckDB runs a statement.'],
  [
    'DUCKDB_JE_MALLOC_CONF',
    'Options of the allocator DuckDB is built with; the executable sets `narenas:1` (one arena) unless this is set.',
  ],
];

const cell = (text) => String(text).replaceAll('|', '\\|').replaceAll('\n', ' ');
const code = (text) => '`' + text + '`';
const table = (head, rows) =>
  [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');

/** The options an options function declares, in order: name → yargs' option object. */
function optionsOf(declare) {
  const options = new Map();
  const recorder = new Proxy(
    {},
    {
      get: (_target, method) => (name, spec) => {
        if ((method === 'option' || method === 'positional') && typeof name === 'string')
          options.set(name, { ...spec, positional: method === 'positional' });
        return recorder;
      },
    },
  );
  declare(recorder);
  return options;
}

/** The commands `costsync --help` lists, in its order; with `command`, the commands `costsync <command> --help` lists. */
async function helpCommands(command) {
  let text = '';
  const collect = (...parts) => (text += `${parts.join(' ')}\n`);
  const io = { env: {}, stdout: collect, stderr: collect, isTTY: false, now: () => Date.now(), columns: 1000 };
  // yargs prints its help with console.log.
  const log = console.log;
  console.log = collect;
  try {
    await runCli(command === undefined ? ['--help'] : [command, '--help'], io);
  } finally {
    console.log = log;
  }
  const prefix = command === undefined ? 'costsync ' : `costsync ${command} `;
  return [...text.matchAll(new RegExp(`^ {2}${prefix}(\\S+)`, 'gm'))].map((m) => m[1]);
}

function settingsPage(commands) {
  const settingDescribe = new Map(
    [...optionsOf((y) => settingOptions(y, ['connection', 'rate', 'notify', 'sync', 'lease', 'catalog']))].map(([k, v]) => [k, v.describe]),
  );
  const takenBy = (name) => commands.filter((c) => c.options.get(name)?.describe === settingDescribe.get(name)).map((c) => c.name);
  const values = (s) =>
    s.choices
      ? s.choices.map(code).join(', ')
      : s.range
        ? `${s.range[0].toLocaleString('en-US')} to ${s.range[1].toLocaleString('en-US')}`
        : s.kind === 'urls'
          ? 'URLs'
          : s.kind === 'duration'
            ? `duration, at least ${leastDuration(s)}`
            : s.kind;
  const settings = table(
    ['flag, config key', 'environment', 'default', 'values', 'commands', 'what it does'],
    SETTING_SPECS.map((s) => [
      code(`--${s.name}`),
      code(envName(s.name)),
      s.defaultText ?? (s.default === undefined ? '' : String(s.default)),
      values(s),
      takenBy(s.name).join(', '),
      s.describe,
    ]),
  );
  const perCommand = commands
    .map((c) => {
      const own = [...c.options].filter(([name, spec]) => name !== 'config' && settingDescribe.get(name) !== spec.describe);
      if (own.length === 0) return null;
      const rows = own.map(([name, spec]) => [
        spec.positional ? code(name) : code(`--${name}`),
        spec.choices ? spec.choices.map(code).join(', ') : (spec.type ?? 'string') + (spec.array ? ' (repeatable)' : ''),
        spec.default === undefined ? '' : String(spec.default),
        spec.describe ?? '',
      ]);
      return `### costsync ${c.name}\n\n${table(['flag', 'values', 'default', 'what it does'], rows)}`;
    })
    .filter((s) => s !== null);
  return [
    HEADER,
    '# Settings and flags',
    '',
    'Every setting below is a flag, a key of the config file (`--config PATH`, default `./costsync.config.json` when present: a JSON',
    'object of settings by flag name) and an environment variable. A flag wins over the environment, which wins over the config file.',
    'The API key is never a flag or a config key: `COSTSYNC_API_KEY`, or `--api-key-file PATH` (a file holding only the key).',
    `Durations are written with a unit (\`90s\`, \`30m\`, \`2h\`, \`7d\`); \`0\` alone, meaning at once, only where a setting's least is 0 (${SETTING_SPECS.filter(
      (s) => s.kind === 'duration' && (s.minMs ?? 0) === 0,
    )
      .map((s) => code(`--${s.name}`))
      .join(', ')}); dates are \`YYYY-MM-DD\`, in UTC.`,
    'Every default and limit, these and the built-in ones, is in one table: [defaults and limits](limits.md).',
    '',
    '## Settings',
    '',
    settings,
    '',
    "## Each command's own flags",
    '',
    'Flags a command declares itself, besides the settings above. The `--db` of `query`, `verify` and `report` is the `db` setting:',
    "`COSTSYNC_DB` and the config file's `db` apply to it too.",
    '',
    perCommand.join('\n\n'),
    '',
    '## Other environment variables',
    '',
    table(
      ['variable', 'what it does'],
      OTHER_VARIABLES.map(([name, what]) => [name.split(', ').map(code).join(', '), what]),
    ),
    '',
    "## The tests' own variables",
    '',
    'costsync ignores these; the test suite reads them ([testing](../testing.md)). Any other `COSTSYNC_*` variable is warned',
    'about at start-up, with the name it is closest to ("did you mean"): a misspelt one would otherwise be ignored without a word.',
    '',
    table(
      ['variable', 'what it does'],
      TEST_VARIABLES.map((v) => [code(v.name), v.describe]),
    ),
    '',
  ].join('\n');
}

function limitsPage() {
  return [
    HEADER,
    '# Defaults and limits',
    '',
    "Every default and limit the docs state, in one table read from the code: each setting's default and range, the",
    "environment variables', and the built-in ones (with the constant that holds each). A test finds the built-in ones in",
    'the pages that state them, so a page cannot keep an old value.',
    '',
    table(
      ['what', 'value', 'in the code'],
      limits().map((l) => [l.what, l.value, l.code]),
    ),
    '',
  ].join('\n');
}

function exitCodesPage() {
  const rows = Object.entries(ExitCode).map(([name, value]) => {
    const errors = Object.entries(ERRORS)
      .filter(([, e]) => e.exit === value)
      .map(([c]) => code(c));
    return [String(value), code(name), EXIT_MEANINGS[name], errors.join(', ')];
  });
  return [
    HEADER,
    '# Exit codes',
    '',
    'Every command exits with one of these. A sync of several sources exits with the worst of their outcomes (a failure over a',
    'stop; among failures the highest code). The errors listed take that exit code unless their message says otherwise (an S3',
    "error's depends on the server's answer, for one); see [errors](errors.md).",
    '',
    table(['code', 'name', 'meaning', 'errors'], rows),
    '',
  ].join('\n');
}

function errorsPage() {
  return [
    HEADER,
    '# Error codes',
    '',
    'Every error has a stable `code`: in `--log-format json` lines (with a `hint`), in `costsync status`, and in `sync_runs`. The exit',
    'code is the usual one for that error ([exit codes](exit-codes.md)); a few places choose another.',
    '',
    table(
      ['code', 'exit', 'meaning'],
      Object.entries(ERRORS).map(([c, e]) => [code(c), String(e.exit), e.summary]),
    ),
    '',
  ].join('\n');
}

/** The reference pages as they should be now: path (from the repository's root) → content. */
export async function referencePages() {
  const listed = await helpCommands();
  const unknown = listed.filter((name) => !(name in COMMAND_OPTIONS));
  const gone = Object.keys(COMMAND_OPTIONS).filter((name) => !listed.includes(name));
  if (unknown.length > 0 || gone.length > 0) {
    throw new Error(
      `docs/generate.mjs: COMMAND_OPTIONS must name the commands of costsync --help (new: ${unknown.join(', ') || 'none'}; gone: ${gone.join(', ') || 'none'}).`,
    );
  }
  const missing = Object.keys(ExitCode).filter((name) => !(name in EXIT_MEANINGS));
  if (missing.length > 0) throw new Error(`docs/generate.mjs: EXIT_MEANINGS lacks ${missing.join(', ')}.`);
  const commands = [];
  for (const name of listed) {
    commands.push({ name, options: optionsOf(COMMAND_OPTIONS[name]) });
    const subcommands = SUBCOMMAND_OPTIONS[name] ?? {};
    const listedSubcommands = await helpCommands(name);
    const documented = Object.keys(subcommands);
    if (listedSubcommands.join() !== documented.join()) {
      throw new Error(
        `docs/generate.mjs: SUBCOMMAND_OPTIONS.${name} must name the commands of costsync ${name} --help (${listedSubcommands.join(', ') || 'none'}; it names ${documented.join(', ') || 'none'}).`,
      );
    }
    for (const sub of documented) commands.push({ name: `${name} ${sub}`, options: optionsOf(subcommands[sub]) });
  }
  return {
    'docs/reference/settings.md': settingsPage(commands),
    'docs/reference/exit-codes.md': exitCodesPage(),
    'docs/reference/limits.md': limitsPage(),
    'docs/reference/errors.md': errorsPage(),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const check = process.argv.includes('--check');
  const stale = [];
  for (const [path, content] of Object.entries(await referencePages())) {
    const file = join(ROOT, path);
    let committed = null;
    try {
      committed = readFileSync(file, 'utf8');
    } catch {
      // a missing page is a stale one
    }
    if (committed === content) continue;
    stale.push(path);
    if (!check) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
  }
  if (check && stale.length > 0) {
    console.error(
      `${stale.join(', ')} differ${stale.length === 1 ? 's' : ''} from what the code says now: run \`${FIX}\` and commit the result.`,
    );
    process.exit(1);
  }
  console.log(stale.length === 0 ? 'docs/reference/ is up to date.' : `wrote ${stale.join(', ')}`);
}
