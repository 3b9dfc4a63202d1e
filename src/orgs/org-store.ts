/**
 * Orgs and their partner credentials, persisted in the control plane (storage/control-plane.ts),
 * mirrored into the PartnerRegistry; the settings an org's own database needs (the currency symbol its
 * profiles show) are written there on every change.
 */
import type { Context } from '../context.js';
import { type Database, tsParam } from '../db/database.js';
import { ENVIRONMENTS, type Environment } from '../domain.js';
import { AppError } from '../errors.js';
import type { Org, OrgCreate, OrgPatch } from '../generated/org.js';
import { DEFAULT_PROFILE_FIELDS } from '../profiles/profile-fields.js';
import { writeOrgSettings } from '../storage/migrate.js';
import type { OrgStorage } from '../storage/org-storage.js';
import { RESERVED_SCHEMA_NAMES } from '../triggers/org-relations.js';
import type { PartnerRegistry } from './partner-registry.js';
import { randomBase62, sha256Hex } from './secrets.js';

export interface PartnerCredential {
  partnerId: string;
  partnerSecret: string;
}

export type CredentialPair = Record<Environment, PartnerCredential>;

interface OrgRow {
  slug: string;
  name: string;
  audience_api: boolean;
  rate_limit: number;
  currency_symbol: string;
  content_fields: string;
  not_found_status: number;
  created_at: Date;
  updated_at: Date;
}

function toOrg(row: OrgRow): Org {
  return {
    slug: row.slug,
    name: row.name,
    audienceApi: row.audience_api,
    rateLimit: row.rate_limit,
    currencySymbol: row.currency_symbol,
    contentFields: JSON.parse(row.content_fields) as string[],
    notFoundStatus: row.not_found_status as Org['notFoundStatus'],
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export interface OrgStoreHooks {
  /** Imported custom columns of the org: valid content fields besides the defaults. */
  customFieldsOf(org: string): ReadonlySet<string>;
  /** Called after a change that alters materialized profiles (the currency symbol). */
  onProfileSettingsChanged(org: string): Promise<void>;
}

const noHooks: OrgStoreHooks = { customFieldsOf: () => new Set(), onProfileSettingsChanged: async () => {} };

export class OrgStore {
  /** Every org in memory: the read API checks its org's settings on each request. */
  private readonly cache = new Map<string, Org>();

  constructor(
    /** The control plane. */
    private readonly db: Database,
    /** The orgs' databases. */
    private readonly storage: OrgStorage,
    private readonly registry: PartnerRegistry,
    private readonly ctx: Context,
    private readonly hooks: OrgStoreHooks = noHooks,
  ) {}

  /** Fills the org cache and the partner registry from DuckDB at start. */
  async load(): Promise<void> {
    for (const org of await this.list()) this.cache.set(org.slug, org);
    const rows = await this.db.all<{ partner_id: string; org: string; environment: Environment; secret_hash: string }>(
      'SELECT partner_id, org, environment, secret_hash FROM partner_credentials',
    );
    for (const r of rows) {
      this.registry.set(r.partner_id, { org: r.org, environment: r.environment, secretHash: r.secret_hash });
    }
  }

  async create(input: OrgCreate): Promise<{ org: Org; credentials: CredentialPair }> {
    const now = tsParam(this.ctx.clock.now());
    const contentFields = input.contentFields ?? [...DEFAULT_PROFILE_FIELDS];
    assertKnownFields(contentFields, new Set());
    const credentials = {} as CredentialPair;
    const issued: Array<{ env: Environment; partnerId: string; hash: string }> = [];
    for (const env of ENVIRONMENTS) {
      const cred = { partnerId: 'pk_' + randomBase62(this.ctx, 20), partnerSecret: 'ps_' + randomBase62(this.ctx, 40) };
      credentials[env] = cred;
      issued.push({ env, partnerId: cred.partnerId, hash: sha256Hex(cred.partnerSecret) });
    }
    await this.db.transaction(async (c) => {
      const existing = await c.all('SELECT 1 FROM orgs WHERE slug = $1', [input.slug]);
      if (existing.length > 0) throw new AppError('org_exists', `org "${input.slug}" already exists`);
      if (RESERVED_SCHEMA_NAMES.has(input.slug)) {
        throw new AppError('invalid_request', `slug "${input.slug}" is reserved: trigger SQL names it as a schema`);
      }
      await c.run('INSERT INTO orgs VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)', [
        input.slug,
        input.name,
        input.audienceApi ?? false,
        input.rateLimit ?? 50,
        input.currencySymbol ?? '$',
        JSON.stringify(contentFields),
        input.notFoundStatus ?? 404,
        now,
      ]);
      for (const i of issued) {
        await c.run('INSERT INTO partner_credentials VALUES ($1, $2, $3, $4, $5, NULL)', [
          i.partnerId,
          input.slug,
          i.env,
          i.hash,
          now,
        ]);
      }
    });
    const org = await this.reload(input.slug);
    // After the control plane's commit: should this fail, the next start writes the settings anyway.
    await writeOrgSettings(this.storage.org(org.slug), org);
    for (const i of issued) this.registry.set(i.partnerId, { org: input.slug, environment: i.env, secretHash: i.hash });
    return { org, credentials };
  }

  /** The org's settings from memory (hot paths). */
  cached(slug: string): Org | undefined {
    return this.cache.get(slug);
  }

  async get(slug: string): Promise<Org> {
    const org = this.cache.get(slug);
    if (!org) throw new AppError('org_not_found', `no org "${slug}"`);
    return org;
  }

  private async reload(slug: string): Promise<Org> {
    const rows = await this.db.all<OrgRow>('SELECT * FROM orgs WHERE slug = $1', [slug]);
    const org = toOrg(rows[0]!);
    this.cache.set(slug, org);
    return org;
  }

  async list(): Promise<Org[]> {
    return (await this.db.all<OrgRow>('SELECT * FROM orgs ORDER BY slug')).map(toOrg);
  }

  async partnerIds(slug: string): Promise<Record<Environment, { partnerId: string }>> {
    const rows = await this.db.all<{ partner_id: string; environment: Environment }>(
      'SELECT partner_id, environment FROM partner_credentials WHERE org = $1',
      [slug],
    );
    const out = {} as Record<Environment, { partnerId: string }>;
    for (const r of rows) out[r.environment] = { partnerId: r.partner_id };
    return out;
  }

  async patch(slug: string, patch: OrgPatch): Promise<Org> {
    const current = await this.get(slug);
    if (patch.contentFields) assertKnownFields(patch.contentFields, this.hooks.customFieldsOf(slug));
    const next = { ...current, ...patch };
    await this.db.run(
      `UPDATE orgs SET name = $2, audience_api = $3, rate_limit = $4, currency_symbol = $5,
         content_fields = $6, not_found_status = $7, updated_at = $8 WHERE slug = $1`,
      [
        slug,
        next.name,
        next.audienceApi,
        next.rateLimit,
        next.currencySymbol,
        JSON.stringify(next.contentFields),
        next.notFoundStatus,
        tsParam(this.ctx.clock.now()),
      ],
    );
    const updated = await this.reload(slug);
    if (patch.currencySymbol !== undefined && patch.currencySymbol !== current.currencySymbol) {
      await writeOrgSettings(this.storage.org(slug), updated);
      await this.hooks.onProfileSettingsChanged(slug);
    }
    return updated;
  }

  /** A new secret for the environment's partnerId; the old secret stops working at once. */
  async rotate(slug: string, environment: Environment): Promise<PartnerCredential> {
    await this.get(slug);
    const partnerSecret = 'ps_' + randomBase62(this.ctx, 40);
    const hash = sha256Hex(partnerSecret);
    const rows = await this.db.all<{ partner_id: string }>(
      `UPDATE partner_credentials SET secret_hash = $3, rotated_at = $4
        WHERE org = $1 AND environment = $2 RETURNING partner_id`,
      [slug, environment, hash, tsParam(this.ctx.clock.now())],
    );
    const partnerId = rows[0]!.partner_id;
    this.registry.set(partnerId, { org: slug, environment, secretHash: hash });
    return { partnerId, partnerSecret };
  }
}

/** SPEC 3: a content field the profile view does not have is refused. */
function assertKnownFields(fields: string[], customFields: ReadonlySet<string>): void {
  const known = new Set<string>(DEFAULT_PROFILE_FIELDS);
  const unknown = fields.filter((f) => !known.has(f) && !customFields.has(f));
  if (unknown.length > 0) {
    throw new AppError('invalid_request', `unknown content fields: ${unknown.join(', ')}`, {
      members: { errors: unknown.map((f) => ({ path: '/contentFields', message: `"${f}" is not a profile field` })) },
    });
  }
}
