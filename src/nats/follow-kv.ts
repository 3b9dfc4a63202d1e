/**
 * Follows a KV bucket: every current value, then each change, in revision order. On nats-server 2.9 a
 * watcher whose (single-replica) consumer sat on a node that died goes silent without an error until
 * nats.js notices two missed 30 s heartbeats (measured: 61–100 s; test/cluster/failover.test.ts). So the
 * bucket's newest revision is compared with the last one seen every second; a watcher that stays behind
 * for two checks is replaced by one that resumes after the last revision seen (a new consumer needs
 * only the meta leader: measured 5–6 s after a node dies).
 */
import type { KV, KvEntry } from '@nats-io/kv';

const CHECK_MS = 1000;
/** Checks in a row the watcher may stay behind the bucket before it is replaced. */
const BEHIND_CHECKS = 2;

export interface KvFollower {
  stop(): void;
}

/** Resolves once the values present at the call were delivered; rejects when the bucket cannot be read. */
export async function followKv(kv: KV, onEntry: (entry: KvEntry) => void, onError: (error: unknown) => void = () => {}): Promise<KvFollower> {
  const head = (await kv.status()).streamInfo.state.last_seq;
  let seen = 0;
  let stopped = false;
  let watcher: { stop(): void } | undefined;
  let loaded: () => void = () => {};
  const ready = new Promise<void>((resolve) => (loaded = resolve));
  if (head === 0) loaded();

  const start = async (): Promise<void> => {
    const current = await kv.watch(seen > 0 ? { resumeFromRevision: seen + 1 } : {});
    watcher = current;
    void (async () => {
      for await (const entry of current) {
        if (entry.revision <= seen) continue;
        seen = entry.revision;
        // One value that cannot be taken in must not stop the following ones.
        try {
          onEntry(entry);
        } catch (error) {
          onError(error);
        }
        if (seen >= head) loaded();
      }
    })().catch(onError);
  };
  await start();

  let behind = 0;
  const timer = setInterval(() => {
    void (async () => {
      const last = (await kv.status()).streamInfo.state.last_seq;
      behind = last > seen ? behind + 1 : 0;
      if (behind < BEHIND_CHECKS || stopped) return;
      behind = 0;
      watcher?.stop();
      await start();
    })().catch(onError);
  }, CHECK_MS);
  timer.unref();
  await ready;
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
      watcher?.stop();
    },
  };
}
