/**
 * Which orgs a storage process owns (SHARD=<i>/<n>): those whose slug hashes to i modulo n. The hash is
 * 32-bit FNV-1a over the slug's UTF-8 bytes: stable across processes, versions and languages (an
 * operator can compute it anywhere), and cheap. n is fixed for a deployment: changing it moves orgs
 * between shards, which means moving their database files with them.
 */
export interface Shard {
  index: number;
  count: number;
}

export const SINGLE_SHARD: Shard = { index: 0, count: 1 };

/** "1/3" → { index: 1, count: 3 }; undefined when malformed or index ≥ count. */
export function parseShard(text: string): Shard | undefined {
  const match = /^(\d{1,4})\/(\d{1,4})$/.exec(text.trim());
  if (!match) return undefined;
  const shard = { index: Number(match[1]), count: Number(match[2]) };
  return shard.count >= 1 && shard.index < shard.count ? shard : undefined;
}

export function shardOf(slug: string, count: number): number {
  return fnv1a32(slug) % count;
}

export function ownsOrg(shard: Shard, slug: string): boolean {
  return shard.count === 1 || shardOf(slug, shard.count) === shard.index;
}

function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
