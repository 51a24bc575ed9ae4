/**
 * The costsync command line as a function of its arguments and IO: registers the commands, refuses a key
 * on the command line, and turns errors into a message (a JSON line when asked) and an exit code. `cli.ts`
 * runs it for the process; tests run it in-process.
 */
import yargs, { type Argv } from 'yargs';
import type { CommandIo } from './commands/common.js';
import { packageVersion } from './paths.js';
import { ConfigError, ExitCode, describeError, errorFields, isCostsyncError } from './errors.js';
import { SETTINGS, camelToKebab, decimal, envName } from './settings.js';
import { createLogger } from './log.js';
import { closest } from './did-you-mean.js';
import { unknownVariableText, unknownVariables } from './env-vars.js';

/** What `--help` ends with: the exit codes and where settings come from. */
const EPILOGUE = [
  // One code a line: yargs wraps long lines, and a list wrapped mid-item reads as two.
  'Exit codes: 0 done;',
  '  1 failed (the API or an output kept failing; progress is saved);',
  '  2 bad flags, settings or input, or an API or bucket that never answered (a wrong host);',
  '  3 the key was refused (unauthorized, scope, plan);',
  '  4 stopped early (--max-runtime, SIGTERM, Ctrl-C; progress is saved);',
  '  5 another run holds the lock or the lease, or the published warehouse changed under this run.',
  'Ctrl-C or SIGTERM stops a sync within seconds with its progress saved (exit 4); a second one exits at once (nothing is lost either way).',
  '',
  `Every setting can also come from the environment as COSTSYNC_<FLAG>: ${SETTINGS.filter((s) => s !== 'api-key-file')
    .map(envName)
    .join(', ')}; flags win over the environment, which wins over the config file.`,
  'The API key comes only from COSTSYNC_API_KEY, a file named by COSTSYNC_API_KEY_FILE or --api-key-file (never a flag: command lines are visible to every user of the machine).',
].join('\n');

/** Whether errors are to be written as JSON lines: --log-format json, or COSTSYNC_LOG_FORMAT=json. */
function jsonErrors(argv: readonly string[], env: NodeJS.ProcessEnv): boolean {
  const i = argv.lastIndexOf('--log-format');
  const flag = i >= 0 ? argv[i + 1] : argv.findLast((a) => a.startsWith('--log-format='))?.slice('--log-format='.length);
  return (flag ?? env.COSTSYNC_LOG_FORMAT) === 'json';
}

/** Writes a failure before (or outside) a run, as one JSON line when JSON logs were asked for. */
export function reportFailure(argv: readonly string[], error: unknown, io: Pick<CommandIo, 'env' | 'stderr'>): void {
  const secrets = io.env.COSTSYNC_API_KEY ? [io.env.COSTSYNC_API_KEY] : [];
  if (jsonErrors(argv, io.env)) {
    const logger = createLogger({ format: 'json', secrets, write: (line) => io.stderr(`${line}\n`) });
    const hint = isCostsyncError(error) ? error.hint : undefined;
    logger.error(isCostsyncError(error) ? error.message : describeError(error, secrets), {
      ...errorFields(error, false),
      ...(hint ? { hint } : {}),
    });
  } else {
    io.stderr(`costsync: ${describeError(error, secrets)}\n`);
  }
}

/** Warns of each COSTSYNC_* variable costsync does not read (a misspelt one would be ignored without a word). */
export function warnUnknownVariables(argv: readonly string[], io: Pick<CommandIo, 'env' | 'stderr'>): void {
  const unknown = unknownVariables(io.env);
  if (unknown.length === 0) return;
  const logger = createLogger({ format: jsonErrors(argv, io.env) ? 'json' : 'pretty', write: (line) => io.stderr(`${line}\n`) });
  for (const v of unknown) logger.warn(unknownVariableText(v));
}

/** Keys on the command line are refused with the reason, before yargs calls them unknown. */
function refuseKeyFlag(argv: readonly string[]): void {
  if (argv.some((a) => a === '--api-key' || a.startsWith('--api-key='))) {
    throw new ConfigError(
      '--api-key is not an option: a key on the command line is visible to every user of the machine (ps, shell history, CI logs).',
      'Set COSTSYNC_API_KEY in the environment, or put the key alone in a file and pass --api-key-file PATH.',
    );
  }
}

/** Runs the command `argv` names with `io`; never throws: a failure is its message and exit code. */
export async function runCli(argv: string[], io: CommandIo): Promise<ExitCode> {
  let code: ExitCode = ExitCode.OK;
  try {
    warnUnknownVariables(argv, io);
    refuseKeyFlag(argv);
    await buildParser(argv, io, (c) => {
      code = c;
    }).parseAsync();
    return code;
  } catch (error) {
    reportFailure(argv, error, io);
    return isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
  }
}

type Run = (args: Record<string, unknown>, io: CommandIo) => Promise<ExitCode>;

/** What a command's module gives: its options, and the function that runs it. */
interface CommandParts {
  options: (y: Argv) => Argv;
  run: Run;
}

/**
 * A command as data: how it is written, what it does, the module with its options and its run, and its
 * own commands. The module is loaded only when its command is the one run: a process pays to load
 * what it uses (`costsync --version` no DuckDB, `sync` no push or report; docs/benchmarks.md, "Start-up").
 */
interface Command {
  command: string;
  describe: string;
  load: () => Promise<CommandParts>;
  subcommands?: readonly Command[];
}

/** The commands, as data. */
const COMMANDS: readonly Command[] = [
  {
    command: 'sync',
    describe: 'Sync line items, rollups and anomalies into DuckDB',
    load: async () => {
      const m = await import('./commands/sync.js');
      return { options: m.syncOptions, run: m.runSyncCommand };
    },
  },
  {
    command: 'push [files..]',
    describe: 'Send FOCUS rows (CSV, Parquet, JSON Lines) to a custom provider connection',
    load: async () => {
      const m = await import('./commands/push.js');
      return { options: m.pushOptions, run: m.runPushCommand };
    },
  },
  {
    // Optional to yargs, so a file after `--` counts; the command refuses none with its own message.
    command: 'push-otel [file]',
    describe: 'Send a JSON document to the OTel ingest endpoint',
    load: async () => {
      const m = await import('./commands/push.js');
      return { options: m.pushOtelOptions, run: m.runPushOtelCommand };
    },
  },
  {
    command: 'query [sql]',
    describe: 'Run read-only SQL against the warehouse; --list shows tables and views',
    load: async () => {
      const m = await import('./commands/query.js');
      return { options: m.queryOptions, run: m.runQueryCommand };
    },
  },
  {
    command: 'export',
    describe: 'Write a FOCUS version (1.2, 1.3 or 1.4) to a file, with its Recency metadata beside it',
    load: async () => {
      const m = await import('./commands/export.js');
      return { options: m.exportOptions, run: m.runExportCommand };
    },
  },
  {
    command: 'verify',
    describe: 'Reconcile line items against rollups and the rollups against each other; exit 1 on a difference',
    load: async () => {
      const m = await import('./commands/verify.js');
      return { options: m.verifyOptions, run: m.runVerifyCommand };
    },
  },
  {
    command: 'report',
    describe: 'Write a self-contained HTML spend report',
    load: async () => {
      const m = await import('./commands/report.js');
      return { options: m.reportOptions, run: m.runReportCommand };
    },
  },
  {
    command: 'notify',
    describe: 'Check the webhooks: --test sends one sample message to each',
    load: async () => {
      const m = await import('./commands/notify.js');
      return { options: m.notifyOptions, run: m.runNotifyCommand };
    },
  },
  {
    command: 'status',
    describe:
      'Show per source and stream the watermark, last run, rows and windows pending, which lake is behind, and work not yet published; --format json for scripts',
    load: async () => {
      const m = await import('./commands/status.js');
      return { options: m.statusOptions, run: m.runStatusCommand };
    },
  },
  {
    command: 'check',
    describe: 'Try the key on each endpoint and say which scopes and plan work (and, with --catalog, what the Iceberg catalog allows)',
    load: async () => {
      const m = await import('./commands/check.js');
      return { options: m.checkOptions, run: m.runCheckCommand };
    },
  },
  // Serves until stopped: its exit code is the process's.
  {
    command: 'emulator',
    describe: 'Serve the Cost Data API emulator on loopback',
    load: async () => {
      const m = await import('./commands/emulator.js');
      return {
        options: m.emulatorOptions,
        run: async (args) => {
          await m.runEmulator(args as never);
          return ExitCode.OK;
        },
      };
    },
    subcommands: [
      {
        command: 'change <what> [date]',
        describe: "Change old data of a running emulator: restate a day, move a line item to another date, set an alert's status",
        load: async () => {
          const m = await import('./commands/emulator-change.js');
          return { options: m.emulatorChangeOptions, run: m.runEmulatorChange };
        },
      },
    ],
  },
  {
    command: 'demo',
    describe: 'Start the emulator, sync 90 days into ./demo.duckdb, show spend and anomalies',
    load: async () => {
      const m = await import('./commands/demo.js');
      return { options: (y) => y, run: async (_args, io) => m.runDemo({}, io) };
    },
  },
];

/**
 * yargs' "Unknown arguments: sinse" as "Unknown option --sinse. Did you mean --since?" when a known one
 * is close, and a misspelt command (`costsync synk`) with the command it is closest to. Pure.
 */
export function withSuggestion(
  message: string,
  known: readonly string[],
  argv: readonly string[],
  commands: readonly string[] = [],
): string {
  if (message.startsWith('Invalid values:')) return choiceMessage(message);
  const unknown = /^Unknown arguments?: (.+)$/.exec(message);
  if (unknown === null) return message;
  // yargs names each unknown flag twice, as written and in camelCase.
  const words = unknown[1]!.split(', ').filter((w) => !/[A-Z]/.test(w));
  const flags = known.filter((k) => k.length > 1 && !/[A-Z]/.test(k));
  const asFlag = (word: string) => argv.some((a) => a === `--${word}` || a.startsWith(`--${word}=`) || a === `-${word}`);
  // A misspelt command, with flags or words after it (`synk --base-url …`, `qurey "select 1"`): the command is the problem.
  const first = argv[0];
  if (first !== undefined && !first.startsWith('-') && words.includes(first) && !commands.includes(first)) {
    const meant = closest(first, commands);
    return `Unknown command ${first}${meant === null ? '' : ` (did you mean ${meant}?)`}.`;
  }
  if (!words.every(asFlag)) return message;
  const parts = words.map((word) => {
    const written = argv.includes(`-${word}`) ? `-${word}` : `--${word}`;
    const meant = closest(word, flags);
    return meant === null ? written : `${written} (did you mean --${meant}?)`;
  });
  return `Unknown option${words.length > 1 ? 's' : ''} ${parts.join(', ')}.`;
}

/**
 * yargs' message for a value outside an option's choices, in costsync's words: the flag as written, what
 * was given, and the values it takes. yargs writes each value as JSON, one "Argument:" line per option. Pure.
 */
function choiceMessage(message: string): string {
  const lines = [...message.matchAll(/^\s*Argument: ([\w-]+), Given: (.*), Choices: (.*)$/gm)];
  if (lines.length === 0) return message;
  const values = (list: string) => JSON.parse(`[${list}]`) as unknown[];
  return lines
    .map(([, name, given, choices]) => {
      const allowed = values(choices!).map(String);
      const list = allowed.length > 1 ? `${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}` : allowed.join('');
      return `--${name} ${values(given!)
        .map((v) => (v === '' ? '""' : String(v)))
        .join(', ')} is not one of its values: use ${list}.`;
    })
    .join('\n');
}

/** The last value `argv` gives option `key` (`--key v` or `--key=v`; a camelCase key as its kebab-case flag), or undefined. Pure. */
export function asWritten(argv: readonly string[], key: string): string | undefined {
  const flag = `--${camelToKebab(key)}`;
  let value: string | undefined;
  argv.forEach((a, i) => {
    if (a.startsWith(`${flag}=`)) value = a.slice(flag.length + 1);
    else if (a === flag && i + 1 < argv.length) value = argv[i + 1];
  });
  return value;
}

/**
 * The command line as yargs should read it. `--max-runtime -5m` as `--max-runtime=-5m`: yargs reads a
 * value starting with a dash and a digit as short flags (`-5`, `-m`) and calls them unknown; joined, the
 * value reaches the option's check, which names the flag. A word that starts with a dash and holds
 * whitespace is no flag (`query "-- spend\nSELECT …"`, SQL opening with a comment): it goes after `--`,
 * where yargs reads words as they are. Pure.
 */
export function normalizeArgv(argv: readonly string[]): string[] {
  const separator = argv.indexOf('--');
  const head = separator === -1 ? argv : argv.slice(0, separator);
  const rest = separator === -1 ? [] : argv.slice(separator + 1);
  const joined: string[] = [];
  for (let i = 0; i < head.length; i++) {
    const a = head[i]!;
    const next = head[i + 1];
    if (/^--[a-z][\w-]*$/.test(a) && next !== undefined && /^-[\d.]/.test(next)) {
      joined.push(`${a}=${next}`);
      i++;
    } else joined.push(a);
  }
  const notFlags = joined.filter((a) => /^-/.test(a) && /\s/.test(a) && !/^--?[a-z][\w-]*=/i.test(a));
  if (notFlags.length === 0 && separator === -1) return joined;
  return [...joined.filter((a) => !notFlags.includes(a)), '--', ...notFlags, ...rest];
}

/** A positional's name for a person. Pure. */
const label = (name: string) => (name === 'sql' ? 'SQL text' : name);

/** The one positional a command's spec names (`push [files..]`), or null for none or more than one. Pure. */
export function positionalOf(command: string): { name: string; variadic: boolean } | null {
  const names = [...command.matchAll(/[[<]([\w-]+)(\.\.)?[\]>]/g)];
  return names.length === 1 ? { name: names[0]![1]!, variadic: names[0]![2] !== undefined } : null;
}

/** Whether `argv` writes option `key` with no value (last, or followed by another flag). Pure. */
export function writtenBare(argv: readonly string[], key: string): boolean {
  const flag = `--${camelToKebab(key)}`;
  return argv.some((a, i) => a === flag && (i + 1 === argv.length || argv[i + 1]!.startsWith('--')));
}

/** Adds a command, and its own commands, to `parser`. */
function register(parser: Argv, c: Command, io: CommandIo, done: (code: ExitCode) => void): Argv {
  // yargs awaits a builder that returns a promise; it calls only the builder of the command being run.
  const builder = async (y: Argv): Promise<Argv> => {
    let built = (await c.load()).options(y);
    if (c.subcommands) {
      // yargs hands a command's options on to its subcommands unless told not to: `emulator change` must
      // not take (or list in its --help) the flags of the server it talks to.
      // (@types/yargs lacks global's second argument, which yargs' own documentation gives.)
      const untyped = built as unknown as { getOptions(): { key: Record<string, unknown> }; global(keys: string[], global: boolean): Argv };
      const own = Object.keys(untyped.getOptions().key).filter((k) => k !== 'help' && k !== 'version');
      built = untyped.global(own, false);
      for (const sub of c.subcommands) built = register(built, sub, io, done);
    }
    return built;
  };
  return parser.command(c.command, c.describe, builder, async (args) => {
    done(await (await c.load()).run(args, io));
  });
}

/**
 * yargs renders a command's whole help text as its handler starts, to print it should the handler
 * fail later: about 0.3 s of CPU for each command run (docs/benchmarks.md, "Start-up"). Our `.fail()`
 * prints no help, so that text is never read; `--help` renders its own when asked.
 */
function skipHelpCache(parser: Argv): void {
  const internals = parser as unknown as { getInternalMethods(): { getUsageInstance(): { cacheHelpMessage(): void } } };
  internals.getInternalMethods().getUsageInstance().cacheHelpMessage = () => undefined;
}

const COMMAND_NAMES = COMMANDS.map((c) => c.command.split(' ')[0]!);

function buildParser(argv: string[], io: CommandIo, done: (code: ExitCode) => void) {
  let parser = yargs(normalizeArgv(argv)).scriptName('costsync').usage('$0 <command> [options]');
  // A flag given twice: the last one wins, as in most CLIs. Done here, not with yargs'
  // 'duplicate-arguments-array': false, which also kept only the last of a variadic positional (`push a.csv b.csv`).
  parser = parser.middleware((args) => {
    const options = (parser as unknown as { getOptions(): { array: string[]; number: string[] } }).getOptions();
    const arrays = new Set(options.array);
    for (const [key, value] of Object.entries(args)) {
      // (`--` holds the words after a `--`: yargs adds them to the positionals and needs them as a list.)
      if (key !== '_' && key !== '--' && Array.isArray(value) && !arrays.has(key)) args[key] = value.at(-1);
      // yargs makes a number option's value NaN when it is not a number, 0 when empty and 16 for 0x10: a value
      // not written as a decimal goes to the option's check as written, which refuses it by name.
      if (typeof args[key] === 'number') {
        const written = asWritten(argv, key);
        if (written !== undefined && Number.isNaN(decimal(written))) args[key] = written;
      }
    }
    // Words after a `--` (yargs leaves them out of the positionals) are the command's: `query -- "SQL"`.
    const words = args['--'];
    if (Array.isArray(words) && words.length > 0) {
      const positional = positionalOf(COMMANDS.find((c) => c.command.split(' ')[0] === argv[0])?.command ?? '');
      if (positional === null) {
        throw new ConfigError(
          `costsync ${argv[0] ?? ''} takes no words, and ${words.join(' ')} came after --.`,
          `Run costsync ${argv[0] ?? ''} --help for its options.`,
        );
      }
      const given = args[positional.name];
      const more = words.map(String);
      if (!positional.variadic && given !== undefined) {
        throw new ConfigError(
          `costsync ${argv[0] ?? ''} takes one ${label(positional.name)}, and got two: ${String(given)} and, after --, ${more.join(' ')}.`,
          `Give the ${label(positional.name)} once, before or after --.`,
        );
      }
      args[positional.name] = positional.variadic ? [...(Array.isArray(given) ? (given as unknown[]) : []), ...more] : more.join(' ');
      delete args['--'];
    }
    // yargs drops a number option written with no value, so `--rate-limit` alone ran at the default 60: the
    // empty value goes to the option's check, as a string option's does.
    for (const key of options.number) if (writtenBare(argv, key)) args[key] = '';
  }, true);
  for (const c of COMMANDS) parser = register(parser, c, io, done);
  skipHelpCache(parser);
  return (
    parser
      .demandCommand(1, 'Name a command; see --help.')
      .strict()
      .fail((message, error) => {
        // The options of the command being parsed (yargs keeps them on its one instance).
        const known = Object.keys((parser as unknown as { getOptions(): { key: Record<string, unknown> } }).getOptions().key);
        throw (
          error ??
          new ConfigError(
            withSuggestion(message, known, argv, COMMAND_NAMES),
            COMMAND_NAMES.includes(argv[0] ?? '')
              ? `Run costsync ${argv[0]} --help for its options and their values.`
              : 'Run costsync --help for the commands and their options.',
          )
        );
      })
      .epilogue(EPILOGUE)
      .wrap(Math.min(120, io.columns ?? 100))
      .help()
      .version(packageVersion())
      // Help and version print, then the run ends here with exit code 0 (the process is the caller's to end).
      .exitProcess(false)
  );
}
