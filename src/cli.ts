#!/usr/bin/env node
/** The costsync command line: registers commands and maps errors to exit codes; nothing else. */
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { runDemo } from './commands/demo.js';
import { emulatorOptions, runEmulator } from './commands/emulator.js';
import { ExitCode, describeError, isCostsyncError } from './errors.js';

async function main(argv: string[]): Promise<void> {
  await yargs(argv)
    .scriptName('costsync')
    .usage('$0 <command> [options]')
    .command('emulator', 'Serve the Cost Data API emulator on loopback', emulatorOptions, async (args) => {
      await runEmulator(args);
    })
    .command('demo', 'Start the emulator and talk to it with the real client', {}, async () => {
      await runDemo();
    })
    .demandCommand(1, 'Name a command; see --help.')
    .strict()
    .fail((message, error) => {
      if (error) throw error;
      process.stderr.write(`${message}\nRun costsync --help for the commands and their options.\n`);
      process.exit(ExitCode.USAGE);
    })
    .help()
    .parseAsync();
}

main(hideBin(process.argv)).catch((error: unknown) => {
  process.stderr.write(`costsync: ${describeError(error)}\n`);
  process.exitCode = isCostsyncError(error) ? error.exitCode : ExitCode.FAILED;
});
