/** Makes a newly created or renamed file's directory entry durable, not only its contents (fsync of the directory). */
import { open } from 'node:fs/promises';

export async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
