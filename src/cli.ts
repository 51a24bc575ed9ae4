#!/usr/bin/env node
/** The costsync process: runs the command line (`cli-app.ts`) with the process's IO and sets its exit code. (The executable is bin.cts.) */
import { hideBin } from 'yargs/helpers';
import { runCli } from './cli-app.js';
import { closedPipe, processIo, streamClosed } from './commands/common.js';

/** A reader that closed the pipe (`| head`): read-only commands end quietly, as git and jq do; a sync stops with progress saved. */
function watchClosedPipes(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (!closedPipe(stream, error)) throw error;
    });
    // A stream closed without a failed write (its reader gone, seen by the stream itself) is the same.
    stream.on('close', () => streamClosed(stream));
  }
}

watchClosedPipes();
process.exitCode = await runCli(hideBin(process.argv), processIo());
