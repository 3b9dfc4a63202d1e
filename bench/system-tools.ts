/**
 * Programs the scale phase runs besides Node (wrk, nats-server), found on PATH or in Debian's usual
 * places, and installed from Debian's packages when missing and we may (root, apt-get present): a
 * fresh machine of this project's kind has nats-server but not wrk, and nothing installed by hand
 * survives a change of machine.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { say } from './harness.js';

const SBIN = ['/usr/sbin', '/usr/bin', '/usr/local/bin', '/usr/local/sbin'];

export function findCommand(command: string): string | undefined {
  const onPath = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
  if (onPath) return onPath;
  return SBIN.map((dir) => `${dir}/${command}`).find((path) => existsSync(path));
}

/**
 * The command's path, installing Debian's `debianPackage` first if it is missing and `install` allows
 * it; undefined (with the reason said) if it cannot be had.
 */
export function ensureCommand(command: string, debianPackage: string, install: boolean): string | undefined {
  const found = findCommand(command);
  if (found) return found;
  if (!install) {
    say(`${command} is not installed (apt-get install -y ${debianPackage})`);
    return undefined;
  }
  if (process.getuid?.() !== 0 || !findCommand('apt-get')) {
    say(`${command} is not installed and this is not a Debian machine where we are root: apt-get install -y ${debianPackage}`);
    return undefined;
  }
  // Another session's apt may hold the lock for a while; an old package list may lack the package.
  const apt = (args: string[]) =>
    execFileSync('apt-get', ['-o', 'DPkg::Lock::Timeout=120', ...args], {
      stdio: 'pipe',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  say(`${command} is missing: apt-get install -y ${debianPackage}`);
  try {
    apt(['install', '-y', '--no-install-recommends', debianPackage]);
  } catch {
    try {
      apt(['update']);
      apt(['install', '-y', '--no-install-recommends', debianPackage]);
    } catch (error) {
      const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim().split('\n').slice(-3).join('\n');
      say(`apt-get install ${debianPackage} failed: ${stderr}`);
      return undefined;
    }
  }
  return findCommand(command);
}

/** The first line a binary prints of its version (wrk prints it with -v and exits 1). */
export function commandVersion(binary: string): string {
  const flag = binary.endsWith('wrk') ? '-v' : '--version';
  try {
    return execFileSync(binary, [flag], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).split('\n')[0]!.trim();
  } catch (error) {
    const out = String((error as { stdout?: string }).stdout ?? '');
    return out.split('\n')[0]!.trim() || binary;
  }
}
