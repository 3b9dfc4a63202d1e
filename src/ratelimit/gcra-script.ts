/**
 * The GCRA of gcra-limiter.ts as one Lua script, so reading and moving a key's TAT is atomic across every
 * API process sharing the Redis. `now` is Redis `TIME`: processes with skewed clocks still agree, and
 * Redis 5+ replicates a script's effects, not the script, so calling TIME before a write is allowed.
 *
 * KEYS[1]: the limited thing. ARGV: ratePerSecond, burst (as JavaScript prints them), '1' to peek
 * (decide without moving the TAT: GcraLimiter.peek) or '0', and the cost (requests at once; default 1). Returns { allowed (0|1), remaining, resetMs,
 * retryAfterMs, nowMs }; the times are strings because Redis turns a Lua number into an integer reply,
 * and `%.17g` prints a double so that it reads back as the same double. nowMs, the Redis time the decision was made at, lets tests replay it on the in-memory limiter.
 */
import type { Redis } from 'ioredis';

export const GCRA_LUA = `
local epsilon = 0.001
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local interval = 1000 / tonumber(ARGV[1])
local tau = (math.max(1, tonumber(ARGV[2])) - 1) * interval
local tat = math.max(tonumber(redis.call('GET', KEYS[1])) or now, now)
local cost = tonumber(ARGV[4]) or 1
local last = tat + (cost - 1) * interval
if last - tau > now + epsilon then
  return { 0, 0, string.format('%.17g', tat - now), string.format('%.17g', last - tau - now), string.format('%.17g', now) }
end
if ARGV[3] == '1' then
  return { 1, math.floor((now + tau - tat + epsilon) / interval) + 1, string.format('%.17g', tat - now), '0', string.format('%.17g', now) }
end
local nextTat = tat + cost * interval
redis.call('SET', KEYS[1], string.format('%.17g', nextTat), 'PX', math.max(1, math.ceil(nextTat - now)))
local remaining = math.max(0, math.floor((now + tau - nextTat + epsilon) / interval) + 1)
return { 1, remaining, string.format('%.17g', nextTat - now), '0', string.format('%.17g', now) }
`;

export type GcraReply = [allowed: 0 | 1, remaining: number, resetMs: string, retryAfterMs: string, nowMs: string];

export interface GcraRedis extends Redis {
  audienceGcra(key: string, ratePerSecond: string, burst: string, peek?: '0' | '1', cost?: string): Promise<GcraReply>;
}

/**
 * Registers the script as a command: ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT, so a
 * restarted Redis (its script cache empty) costs one extra round trip, not a failure. Idempotent.
 */
export function withGcraCommand(redis: Redis): GcraRedis {
  if (!('audienceGcra' in redis)) redis.defineCommand('audienceGcra', { numberOfKeys: 1, lua: GCRA_LUA });
  return redis as GcraRedis;
}
