/** `costsync notify --test`: sends one sample message to every configured webhook, so a person can check the wiring. */
import type { Argv } from 'yargs';
import { ConfigError, ExitCode, describeError } from '../errors.js';
import { DEFAULT_SEND, messageBody, postWebhook, webhookTarget } from '../notify/webhook.js';
import { connectionOptions, loadConfig, processIo, type CommandIo } from './sync.js';

export function notifyOptions(yargs: Argv) {
  return connectionOptions(yargs)
    .option('test', { type: 'boolean', describe: 'Send one sample message to each webhook' })
    .option('notify', { type: 'string', array: true, describe: 'Webhook URL (repeatable) [default: the config file\'s]' })
    .option('notify-format', { choices: ['json', 'slack'] as const, describe: 'json: {text, events}; slack: {text} only [default json]' });
}

export async function runNotifyCommand(args: Record<string, unknown>, io: CommandIo = processIo()): Promise<ExitCode> {
  const config = loadConfig(args, io, false);
  const urls = [...config.notify, ...(config.sources ?? []).flatMap((s) => s.notify ?? [])];
  try {
    if (args.test !== true) throw new ConfigError('Nothing to do.', 'Pass --test to send one sample message to each webhook.');
    if (urls.length === 0) throw new ConfigError('No webhook configured.', 'Pass --notify URL, or list them under "notify" in the config file.');
  } catch (error) {
    io.stderr(`costsync: ${describeError(error)}\n`);
    return ExitCode.USAGE;
  }
  let failed = 0;
  for (const url of new Set(urls)) {
    const target = webhookTarget(url, '--notify');
    const event = { kind: 'test' as const, source: 'costsync', event_id: `test-${io.now()}`, text: 'test message from costsync: this webhook works' };
    try {
      await postWebhook(target, messageBody([event], config.notifyFormat), { ...DEFAULT_SEND, retries: 1 });
      io.stdout(`webhook ${target.id}: sent\n`);
    } catch (error) {
      failed += 1;
      io.stdout(`webhook ${target.id}: failed: ${describeError(error, [url])}\n`);
    }
  }
  return failed === 0 ? ExitCode.OK : ExitCode.FAILED;
}
