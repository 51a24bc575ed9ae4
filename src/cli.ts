#!/usr/bin/env node
/** The costsync process: runs the command line (`cli-app.ts`) with the process's IO and sets its exit code. (The executable is bin.cts.) */
import { hideBin } from 'yargs/helpers';
import { runCli } from './cli-app.js';
import { processIo } from './commands/common.js';
import { ExitCode } from './errors.js';

/** A reader that closed the pipe (`| head`) ends the command quietly, as git and jq do. */
function quietOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(process.exitCode ?? ExitCode.OK);
      throw error;
    });
  }
}

quietOnClosedPipe();
process.exitCode = await runCli(hideBin(process.argv), processIo());
