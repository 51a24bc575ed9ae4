/** What the commands share: the connection options, their IO, the configuration and the logger. */
import type { Argv } from 'yargs';
import { readConfigFile, resolveSyncConfig, type SyncConfig } from '../config.js';
import { SETTINGS, settingOptions, type SettingName } from '../settings.js';
import { ConfigError, shortSecretWarnings } from '../errors.js';
import { CATALOG_CREDENTIAL_ENV, CATALOG_TOKEN_ENV, catalogSecrets } from '../iceberg/rest-auth.js';
import { createLogger, type Logger } from '../log.js';
import { pipesToWatch, standardStreams, watchReaders } from '../reader-watch.js';

/** The options every command that talks to the API or the warehouse takes (settings.ts). */
export function connectionOptions(yargs: Argv): Argv {
  return settingOptions(yargs, ['connection']);
}

export interface CommandIo {
  env: NodeJS.ProcessEnv;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  isTTY: boolean;
  now: () => number;
  /** The terminal's width, when stdout is one (for text that wraps). */
  columns?: number | undefined;
  /**
   * While the returned function is not called, a closed stdout or stderr (a reader such as `head` went
   * away) calls `onClosed` instead of ending the process quietly: a sync stops as on SIGTERM.
   */
  onClosedPipe?: (onClosed: (which: string) => void) => () => void;
  /** Resolves once what was written has reached stdout and stderr, or was found closed (then `onClosedPipe`'s handler ran). */
  flushed?: () => Promise<void>;
}

/** What this process does when stdout or stderr is closed: the handler a command set, or nothing (end quietly). */
let closedPipeHandler: ((which: string) => void) | null = null;
/** Streams found closed: later writes to them are dropped. */
const closedStreams = new Set<NodeJS.WriteStream>();

/**
 * A write to a closed stdout or stderr (EPIPE): later writes to it are dropped, and the command's handler
 * is told; with none, the process ends quietly with the exit code it has, as git and jq do. Returns
 * whether it was a closed pipe.
 */
export function closedPipe(stream: NodeJS.WriteStream, error: NodeJS.ErrnoException): boolean {
  if (error.code !== 'EPIPE') return false;
  streamClosed(stream);
  return true;
}

/** stdout or stderr is closed (a failed write, or the stream's own `close`): as `closedPipe`. */
export function streamClosed(stream: NodeJS.WriteStream): void {
  const first = !closedStreams.has(stream);
  closedStreams.add(stream);
  if (closedPipeHandler === null) process.exit(process.exitCode ?? 0);
  if (first) closedPipeHandler(pipeName(stream));
}

/** How a closed stream is named: one pipe carrying both (`2>&1 |`) is named as both, whichever failed first. */
function pipeName(stream: NodeJS.WriteStream): string {
  const pipes = pipesToWatch(standardStreams());
  const shared = pipes.find((p) => p.streams.length === 2);
  if (shared !== undefined) return 'stdout and stderr (one pipe)';
  return stream === process.stdout ? 'stdout' : 'stderr';
}

/**
 * Writes to stdout or stderr. A pipe's write fails synchronously (its error event comes a tick later),
 * so a closed pipe is told at once: the code after a log line must not start another API request.
 */
export const writeTo = (stream: NodeJS.WriteStream) => (text: string) => {
  if (closedStreams.has(stream)) return;
  stream.write(text);
  const failed = stream.errored;
  if (failed !== null) closedPipe(stream, failed);
};

export const processIo = (): CommandIo => ({
  env: process.env,
  stdout: writeTo(process.stdout),
  stderr: writeTo(process.stderr),
  isTTY: Boolean(process.stderr.isTTY),
  now: () => Date.now(),
  columns: process.stdout.columns,
  flushed: async () => {
    for (const stream of [process.stdout, process.stderr]) {
      if (closedStreams.has(stream)) continue;
      const failed = await new Promise<NodeJS.ErrnoException | null | undefined>((resolve) => stream.write('', resolve));
      if (failed) closedPipe(stream, failed);
    }
  },
  onClosedPipe: (onClosed) => {
    closedPipeHandler = onClosed;
    // A reader gone while nothing is written is noticed at once too, not at the next line.
    const unwatch = watchReaders(standardStreams(), (streams) => {
      for (const which of streams) streamClosed(which === 'stdout' ? process.stdout : process.stderr);
    });
    return () => {
      unwatch();
      closedPipeHandler = null;
    };
  },
});

/** The settings given as flags, by name, leaving out what was not given. */
export function flagsOf(args: Record<string, unknown>): Partial<Record<SettingName, unknown>> {
  const flags: Partial<Record<SettingName, unknown>> = {};
  for (const name of SETTINGS) if (args[name] !== undefined) flags[name] = args[name];
  return flags;
}

export function loadConfig(args: Record<string, unknown>, io: CommandIo, needsApi = true): SyncConfig {
  const file = readConfigFile(args.config as string | undefined);
  return resolveSyncConfig({ flags: flagsOf(args), env: io.env, file: file.values, fileSources: file.sources, nowMs: io.now() }, needsApi);
}

/** Commands that talk to one workspace (push, check) need one source: `--source NAME` when the config names several. */
export function oneSource(config: SyncConfig, command: string): SyncConfig & { sourceName: string } {
  const sources = config.sources ?? [];
  if (config.shard !== undefined && sources.length === 0) {
    throw new ConfigError(
      `Shard ${config.shard.index}/${config.shard.count} owns none of the sources selected; ${command} works on one.`,
      'Pick the source with --source NAME and leave out --shard and --shard-count.',
    );
  }
  if (sources.length > 1) {
    throw new ConfigError(
      `The config file names ${sources.length} sources (${sources.map((s) => s.name).join(', ')}); ${command} works on one.`,
      `Pick it with --source NAME, for example --source ${sources[0]!.name}.`,
    );
  }
  return { ...config, sourceName: sources[0]?.name ?? 'default' };
}

export function makeLogger(config: Pick<SyncConfig, 'logFormat' | 'quiet' | 'apiKey'> & { verbose?: boolean }, io: CommandIo): Logger {
  return createLogger({
    format: config.logFormat,
    level: config.quiet ? 'warn' : config.verbose ? 'debug' : 'info',
    secrets: [config.apiKey],
    write: (line) => io.stderr(`${line}\n`),
    now: io.now,
  });
}

/** Warns, at start-up, of each secret of `config` short enough to be mistaken for a word (named by where it came from). */
export function warnShortSecrets(config: SyncConfig, logger: Logger): void {
  const keys = (config.sources ?? []).map((s) => ({ what: `The API key from ${s.keyFrom ?? `source "${s.name}"`}`, value: s.apiKey }));
  const env = config.catalog?.env ?? {};
  const [token, secret] = [env[CATALOG_TOKEN_ENV]?.trim(), catalogSecrets({ [CATALOG_CREDENTIAL_ENV]: env[CATALOG_CREDENTIAL_ENV] })[0]];
  const catalog = [
    ...(token ? [{ what: CATALOG_TOKEN_ENV, value: token }] : []),
    ...(secret ? [{ what: `The client secret in ${CATALOG_CREDENTIAL_ENV}`, value: secret }] : []),
  ];
  const apiKey =
    config.sources === undefined && config.apiKey !== ''
      ? [{ what: `The API key from ${config.apiKeyFrom ?? 'COSTSYNC_API_KEY'}`, value: config.apiKey }]
      : [];
  for (const warning of shortSecretWarnings([...apiKey, ...keys, ...catalog])) logger.warn(warning);
}
