/** The storage process of a service process (a child running storage-process.js), found in /proc. */
import { readdirSync, readFileSync } from 'node:fs';

export function storagePid(servicePid: number): number | undefined {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === servicePid && readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('storage-process')) return Number(name);
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}
