/** The checkpoint and the high-water mark on real files: what is read back from missing, damaged and hostile files. */
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { CHECKPOINT_FILE, HIGH_WATER_FILE, LogCheckpoint, logPositions } from '../../src/storage/checkpoint.js';

function checkpointIn(dir: string): LogCheckpoint {
  return new LogCheckpoint(join(dir, 'orgs', CHECKPOINT_FILE));
}

t.test('the mark is raised in place, durably, and read back', async (t) => {
  const dataDir = t.testdir({ orgs: {} });
  const checkpoint = checkpointIn(dataDir);
  t.equal(checkpoint.highWater(), 0, 'nothing written: 0');
  await checkpoint.raiseHighWater(41);
  await checkpoint.raiseHighWater(1234567);
  t.equal(await readFile(join(dataDir, 'orgs', HIGH_WATER_FILE), 'utf8'), '00000000000001234567\n', 'one fixed-size line');
  t.equal(checkpoint.highWater(), 1234567);
  checkpoint.write(9);
  t.same(logPositions(dataDir), { highWater: 1234567, compactedSeq: 9 }, 'what the log is opened with');
});

t.test('a missing, damaged or older mark counts as the checkpoint', async (t) => {
  const dataDir = t.testdir({ orgs: {} });
  const checkpoint = checkpointIn(dataDir);
  checkpoint.write(500);
  t.equal(checkpoint.highWater(), 500, 'no mark (a DATA_DIR from before it was kept)');
  const file = join(dataDir, 'orgs', HIGH_WATER_FILE);
  for (const text of ['', 'garbage', '-5', '1e3', '0x1f4', '12abc', '99999999999999999999', '\u0000'.repeat(21), '400']) {
    await writeFile(file, text);
    t.equal(checkpoint.highWater(), 500, `${JSON.stringify(text.slice(0, 24))}: the checkpoint`);
  }
  await writeFile(file, '00000000000000000700\n');
  t.equal(checkpoint.highWater(), 700);
});

t.test('the mark is never written through a symlink', async (t) => {
  const dataDir = t.testdir({ orgs: {}, 'elsewhere.txt': 'keep me\n' });
  await symlink(join(dataDir, 'elsewhere.txt'), join(dataDir, 'orgs', HIGH_WATER_FILE));
  await t.rejects(checkpointIn(dataDir).raiseHighWater(10), { code: 'ELOOP' });
  t.equal(await readFile(join(dataDir, 'elsewhere.txt'), 'utf8'), 'keep me\n', 'the target is untouched');
});

t.test('a mark that cannot be written fails the raise', async (t) => {
  const dataDir = t.testdir({ orgs: {} });
  await mkdir(join(dataDir, 'orgs', HIGH_WATER_FILE));
  await t.rejects(checkpointIn(dataDir).raiseHighWater(10), { code: 'EISDIR' });
  t.ok((await stat(join(dataDir, 'orgs', HIGH_WATER_FILE))).isDirectory());
});
