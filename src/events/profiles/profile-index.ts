/**
 * The serving index: every materialized profile in memory, keyed by each identity type, so a lookup is
 * a Map get (a DuckDB point query costs ~0.3 ms; the API's budget per request is a fraction of that).
 */
import { emailHash } from '../../core/domain.js';

export { emailHash };

/** A profile as served: default fields plus the contact's imported custom fields, JSON-ready values. */
export type Profile = Readonly<Record<string, unknown>>;

export type IdentityType = 'email' | 'email-hash' | 'user_id';

/**
 * One contact in the index. A refresh replaces the entry, so `answer` (the Audience API's JSON of
 * this profile's content fields, and of a batch entry's middle, kept by routes/audience/ on first lookup) never outlives the profile it was built from;
 * keeping it here costs the lookup one property read instead of a second hash lookup.
 *
 * Receipts that move only its first and last seen (most events) are kept as two numbers and folded into
 * the profile when it is next read: under collect every event moved a contact on, and a copy of its
 * profile per event lived long enough to be copied by each young-generation GC and promoted (pauses of
 * 5–18 ms every ~200 ms at collect's saturation).
 */
export class IndexedProfile {
  answer: { fields: readonly string[]; json: string; found?: string } | undefined;
  /** First and last seen (epoch ms) as moved on since `held` was made (undefined: as `held` has them). */
  private seen: { first: number; last: number } | undefined;

  constructor(
    private held: Profile,
    /** Which fields of the profile are custom ones (as the feed publishes them). */
    readonly customFields: readonly string[],
  ) {}

  get profile(): Profile {
    const seen = this.seen;
    if (seen) {
      this.seen = undefined;
      const changes: Record<string, string> = {};
      if (seen.first < seenMs(this.held.first_seen_at, Infinity)) changes.first_seen_at = new Date(seen.first).toISOString();
      if (seen.last > seenMs(this.held.last_seen_at, -Infinity)) changes.last_seen_at = new Date(seen.last).toISOString();
      if (changes.first_seen_at !== undefined || changes.last_seen_at !== undefined) this.held = Object.freeze({ ...this.held, ...changes });
    }
    return this.held;
  }

  /**
   * Takes in receipts between `first` and `last` (epoch ms) as a first and last seen, without copying the
   * profile now; answers whether they moved either.
   */
  see(first: number, last: number): boolean {
    const seen = (this.seen ??= { first: seenMs(this.held.first_seen_at, Infinity), last: seenMs(this.held.last_seen_at, -Infinity) });
    if (first >= seen.first && last <= seen.last) return false;
    seen.first = Math.min(seen.first, first);
    seen.last = Math.max(seen.last, last);
    this.answer = undefined;
    return true;
  }
}

/** A profile's first or last seen as epoch ms; `none` when it has none. */
function seenMs(value: unknown, none: number): number {
  return typeof value === 'string' ? Date.parse(value) : none;
}

interface OrgProfiles {
  byEmail: Map<string, IndexedProfile>;
  emailByHash: Map<string, string>;
  emailByUserId: Map<string, string>;
  customFields: Set<string>;
  /** The newest `last_seen_at` of its profiles (epoch ms; -Infinity: none has an event). */
  newestSeen: number;
}


export class ProfileIndex {
  private readonly orgs = new Map<string, OrgProfiles>();
  /** Orgs whose profiles could not be loaded (their database does not open): a miss there is not a 404. */
  private readonly unloaded = new Set<string>();

  /** The org's profiles could not be loaded (`false`: they are again). */
  setUnavailable(org: string, unavailable: boolean): void {
    if (unavailable) this.unloaded.add(org);
    else this.unloaded.delete(org);
  }

  isUnavailable(org: string): boolean {
    return this.unloaded.has(org);
  }

  upsert(org: string, profile: Profile, customFieldNames: readonly string[]): void {
    const profiles = this.orgProfiles(org);
    const email = profile.email_address as string;
    const previous = profiles.byEmail.get(email)?.profile;
    if (previous === undefined) profiles.emailByHash.set(emailHash(email), email);
    if (previous?.user_id && previous.user_id !== profile.user_id) profiles.emailByUserId.delete(previous.user_id as string);
    if (typeof profile.user_id === 'string') profiles.emailByUserId.set(profile.user_id, email);
    for (const name of customFieldNames) profiles.customFields.add(name);
    const seen = typeof profile.last_seen_at === 'string' ? Date.parse(profile.last_seen_at) : Number.NaN;
    if (seen > profiles.newestSeen) profiles.newestSeen = seen;
    profiles.byEmail.set(email, new IndexedProfile(profile, customFieldNames));
  }

  /** The contact's first and last seen move on to take in receipts between `first` and `last` (see IndexedProfile.see). */
  see(org: string, contact: IndexedProfile, first: number, last: number): void {
    const profiles = this.orgs.get(org);
    if (!profiles || !contact.see(first, last)) return;
    if (last > profiles.newestSeen) profiles.newestSeen = last;
  }

  /** Custom fields the org's profiles may have before any has (a live trait's name): valid content fields. */
  addCustomFields(org: string, names: Iterable<string>): void {
    for (const name of names) this.orgProfiles(org).customFields.add(name);
  }

  /** The contact whose e-mail hashes to `hash` was erased: its profile goes, under every identity. */
  removeHash(org: string, hash: string): void {
    const profiles = this.orgs.get(org);
    const email = profiles?.emailByHash.get(hash);
    if (!profiles || email === undefined) return;
    const userId = profiles.byEmail.get(email)?.profile.user_id;
    if (typeof userId === 'string' && profiles.emailByUserId.get(userId) === email) profiles.emailByUserId.delete(userId);
    profiles.emailByHash.delete(hash);
    profiles.byEmail.delete(email);
  }

  /** The org was deleted: its profiles go. */
  removeOrg(org: string): void {
    this.orgs.delete(org);
  }

  find(org: string, type: IdentityType, value: string): Profile | undefined {
    return this.lookup(org, type, value)?.profile;
  }

  lookup(org: string, type: IdentityType, value: string): IndexedProfile | undefined {
    const profiles = this.orgs.get(org);
    return profiles ? lookupIn(profiles, type, value) : undefined;
  }

  /** `lookup` for one org, its maps found once (a batch looks up 100 contacts of one org). */
  finder(org: string): (type: IdentityType, value: string) => IndexedProfile | undefined {
    const profiles = this.orgs.get(org);
    return profiles ? (type, value) => lookupIn(profiles, type, value) : () => undefined;
  }

  /** Names of imported custom columns seen for the org (valid content fields besides the defaults). */
  customFields(org: string): ReadonlySet<string> {
    return this.orgs.get(org)?.customFields ?? new Set();
  }

  /** Receipt time (epoch ms) of the newest event folded into any of the org's profiles; -Infinity when none. */
  newestSeen(org: string): number {
    return this.orgs.get(org)?.newestSeen ?? Number.NEGATIVE_INFINITY;
  }

  /** Profiles held, every org together. */
  totalSize(): number {
    let total = 0;
    for (const profiles of this.orgs.values()) total += profiles.byEmail.size;
    return total;
  }

  size(org: string): number {
    return this.orgs.get(org)?.byEmail.size ?? 0;
  }

  private orgProfiles(org: string): OrgProfiles {
    let profiles = this.orgs.get(org);
    if (!profiles) {
      profiles = { byEmail: new Map(), emailByHash: new Map(), emailByUserId: new Map(), customFields: new Set(), newestSeen: Number.NEGATIVE_INFINITY };
      this.orgs.set(org, profiles);
    }
    return profiles;
  }
}

function lookupIn(profiles: OrgProfiles, type: IdentityType, value: string): IndexedProfile | undefined {
  switch (type) {
    case 'email':
      return profiles.byEmail.get(value);
    case 'email-hash': {
      const email = profiles.emailByHash.get(value);
      return email === undefined ? undefined : profiles.byEmail.get(email);
    }
    case 'user_id': {
      const email = profiles.emailByUserId.get(value);
      return email === undefined ? undefined : profiles.byEmail.get(email);
    }
  }
}
