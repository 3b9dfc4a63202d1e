/**
 * Experiments only (npm run bench -- --ablate materializer): starts the real service (dist/src/server.js)
 * with one part switched off by patching it before the service loads, to measure what that part costs.
 * Never used for bench/results/collect.json.
 *   materializer   the profile refresh after each compaction commit (ProfileMaterializer.refresh) does nothing
 */
import { ProfileMaterializer } from '../src/events/profiles/profile-materializer.js';

const parts = new Set((process.env.BENCH_ABLATE ?? '').split(',').filter(Boolean));
for (const part of parts) {
  if (part === 'materializer') {
    ProfileMaterializer.prototype.refresh = async () => true;
  } else {
    console.error(`bench/ablate: unknown part ${part}`);
    process.exit(2);
  }
}

await import('../src/server.js');
