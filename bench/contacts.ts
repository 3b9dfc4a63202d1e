/**
 * Synthetic contacts for the Audience API benchmark (bench/audience.ts): a reproducible set of
 * distinct contacts, their import CSV, and request paths that look them up with random identities.
 */
import { createHash } from 'node:crypto';

export interface Contact {
  /** Already normalised (trimmed, lower-case), as the service keys contacts. */
  email: string;
  firstName: string;
  lastName: string;
  userId: string;
  city: string;
  state: string;
  country: string;
}

const FIRST = ['ada', 'grace', 'alan', 'edsger', 'barbara', 'donald', 'margaret', 'ken', 'frances', 'john', 'radia', 'leslie'];
const LAST = ['lovelace', 'hopper', 'turing', 'dijkstra', 'liskov', 'knuth', 'hamilton', 'thompson', 'allen', 'backus', 'perlman', 'lamport'];
const DOMAINS = ['example.com', 'mail.example.net', 'example.org', 'shop.example.co.uk'];
const PLACES = [
  ['Lisbon', 'Lisboa', 'PT'],
  ['London', 'England', 'GB'],
  ['Austin', 'TX', 'US'],
  ['Lyon', 'Auvergne-Rhône-Alpes', 'FR'],
  ['Utrecht', 'Utrecht', 'NL'],
] as const;

const capital = (s: string) => s[0]!.toUpperCase() + s.slice(1);

/** mulberry32: a small seeded PRNG, so runs import and ask for the same contacts. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function syntheticContacts(count: number): Contact[] {
  return Array.from({ length: count }, (_, i) => {
    const first = FIRST[i % FIRST.length]!;
    const last = LAST[Math.floor(i / FIRST.length) % LAST.length]!;
    const place = PLACES[i % PLACES.length]!;
    return {
      email: `${first}.${last}.${i}@${DOMAINS[i % DOMAINS.length]}`,
      firstName: capital(first),
      lastName: capital(last),
      userId: `usr_${i.toString(36).padStart(6, '0')}`,
      city: place[0],
      state: place[1],
      country: place[2],
    };
  });
}

/**
 * An imported contact as the Audience API answers it with the default content fields (SPEC 6.1): the
 * same keys, order and value types (the bare servers' answers, bench/bare-server.ts and fair-bare.ts).
 */
export function contactAnswer(c: Contact) {
  return {
    status: 'success',
    contact: {
      email_address: c.email,
      first_name: c.firstName,
      last_name: c.lastName,
      user_id: c.userId,
      address_city: c.city,
      address_state: c.state,
      address_country: c.country,
      campaigns_received: [],
      flow_variant_membership: [],
      total_lifetime_value: 0,
      total_lifetime_value_jde: '$0.00',
      last_purchase_date: null,
      order_count: 0,
      first_seen_at: null,
      last_seen_at: null,
    },
  };
}

/** The import body (POST /admin/v1/orgs/{slug}/contacts/import, text/csv) of contacts[from, to). */
export function contactsCsv(contacts: Contact[], from: number, to: number): string {
  const lines = ['email_address,first_name,last_name,user_id,address_city,address_state,address_country'];
  for (const c of contacts.slice(from, to)) {
    lines.push([c.email, c.firstName, c.lastName, c.userId, c.city, c.state, c.country].join(','));
  }
  return `${lines.join('\n')}\n`;
}

/** SPEC 6.2: hex SHA-256 of the normalised e-mail. */
export function emailHash(email: string): string {
  return createHash('sha256').update(email).digest('hex');
}

/** Share of each identity type in the generated requests (mostly e-mail, as clients mostly send). */
export const IDENTITY_MIX = { email: 0.8, 'email-hash': 0.1, user_id: 0.1 } as const;

/**
 * Request paths `<prefix>?identity=<type>:<value>`, a uniformly random contact each, the identity type
 * drawn by IDENTITY_MIX. The e-mail hashes are computed once up front, not per request.
 */
export class IdentityPaths {
  private readonly hashes: string[];
  private readonly random: () => number;
  readonly issued = { email: 0, 'email-hash': 0, user_id: 0 };

  constructor(
    private readonly contacts: Contact[],
    private readonly prefix: string,
    seed = 1,
  ) {
    this.hashes = contacts.map((c) => emailHash(c.email));
    this.random = seededRandom(seed);
  }

  next(): string {
    return `${this.prefix}?identity=${encodeURIComponent(this.nextIdentity())}`;
  }

  /** The identity alone (`<type>:<value>`), drawn as for a path. */
  nextIdentity(): string {
    const i = Math.floor(this.random() * this.contacts.length);
    const draw = this.random();
    const c = this.contacts[i]!;
    if (draw < IDENTITY_MIX.email) {
      this.issued.email++;
      return `email:${c.email}`;
    }
    if (draw < IDENTITY_MIX.email + IDENTITY_MIX['email-hash']) {
      this.issued['email-hash']++;
      return `email-hash:${this.hashes[i]}`;
    }
    this.issued.user_id++;
    return `user_id:${c.userId}`;
  }
}

/**
 * Bodies of POST /audience/v2/contacts/batch: `size` identities each, drawn as IdentityPaths draws them
 * (random contacts, the same identity mix), a pool made up front and sent in turn.
 */
export class BatchBodies {
  /** A batch is one request, not events. */
  readonly events = 1;
  readonly pool: Buffer[];
  private sent = 0;

  constructor(contacts: Contact[], size: number, seed = 4, poolSize = 256) {
    const paths = new IdentityPaths(contacts, '', seed);
    this.pool = Array.from({ length: poolSize }, () => {
      const identities = new Set<string>();
      while (identities.size < size) identities.add(paths.nextIdentity());
      return Buffer.from(JSON.stringify({ identities: [...identities] }));
    });
  }

  get bytes(): number {
    return this.pool[0]!.length;
  }

  next(): Buffer {
    return this.pool[this.sent++ % this.pool.length]!;
  }
}
