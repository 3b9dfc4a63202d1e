/** `audiencectl` as a user runs it: a process, its exit code and both streams (from the build, see entry.ts). */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { entryArgs, ROOT } from './entry.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in `cwd` (default: the repository) with exactly `env` as its environment. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<CliRun> {
  // The entry by its absolute path: a command may run in another folder (a team's queries).
  const entry = entryArgs('cli').map((arg) => (arg.startsWith('src/') ? join(ROOT, arg) : arg));
  return new Promise((resolve) => {
    execFile(process.execPath, [...entry, ...args], { cwd, env }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}
