/**
 * Orgs and their partner credentials: one control document per org (control/documents.ts), kept in
 * memory from the control plane's watch and mirrored into the PartnerRegistry. A change made by any
 * process reaches every process through `apply`; listeners (the storage roles: an org database's settings,
 * its profiles) hear each change once, in order.
 */
import { changeDocument, createDocument } from './change-document.js';
import { type DeletedOrgDocument, isDeletedOrg, type OrgDocument, type StoredWriteKey } from './documents.js';
import { type ControlDocuments, type ControlEntry, ControlConflictError, orgKey } from './types.js';
import type { Context } from '../core/context.js';
import { ENVIRONMENTS, type Environment } from '../core/domain.js';
import { isTimeZone, type QuietHours, quietHoursProblem } from '../core/quiet-hours.js';
import { AppError } from '../core/errors.js';
import type { Org, OrgCreate, OrgPatch } from '../generated/org.js';
import { DEFAULT_PROFILE_FIELDS, OPTIONAL_PROFILE_FIELDS } from '../core/profile-fields.js';
import { RESERVED_SCHEMA_NAMES } from '../core/org-relations.js';
import type { PartnerRegistry } from './partner-registry.js';
import { randomBase62, sha256Hex } from '../core/secrets.js';

export interface PartnerCredential {
  partnerId: string;
  partnerSecret: string;
}

/** What an org's answer shows of an environment's credentials: ids, and a write key by its last characters. */
export interface CredentialSummary {
  partnerId: string;
  writeKey: { last4: string; createdAt: string } | null;
}

/** A new write key: `wk_` and 32 base62 characters (190 bits), no colon, so HTTP Basic carries it whole. */
function newWriteKey(ctx: Context): string {
  return 'wk_' + randomBase62(ctx, 32);
}

function storedWriteKey(writeKey: string, now: number): StoredWriteKey {
  return { hash: sha256Hex(writeKey), last4: writeKey.slice(-4), createdAt: now };
}

export type CredentialPair = Record<Environment, PartnerCredential & { writeKey: string }>;

/** Told of every org created or changed (previous: undefined for a new org), here or on another process. */
export type OrgListener = (org: Org, previous: Org | undefined) => Promise<void>;
/** Told of every org deleted, here or on another process (also, at start, of orgs deleted before). */
export type OrgDeleteListener = (slug: string) => Promise<void>;

export interface OrgStoreOptions {
  /** Imported custom columns of the org: valid content fields besides the defaults. */
  customFieldsOf?(org: string): ReadonlySet<string>;
  /** A listener failed on a change made by another process (nobody waits for it). */
  onListenerError?(error: unknown): void;
}

export class OrgStore {
  /** Every org in memory: the read API checks its org's settings on each request. */
  private readonly documents = new Map<string, { document: OrgDocument; revision: number }>();
  private readonly listeners: OrgListener[] = [];
  private readonly deleteListeners: OrgDeleteListener[] = [];
  /** Slugs of deleted orgs, with the revision of their deletion. */
  private readonly deleted = new Map<string, number>();
  /** Listeners run one change at a time, in the order the changes were applied. */
  private told: Promise<void> = Promise.resolve();

  constructor(
    private readonly control: ControlDocuments,
    private readonly registry: PartnerRegistry,
    private readonly ctx: Context,
    private readonly options: OrgStoreOptions = {},
  ) {}

  onChange(listener: OrgListener): void {
    this.listeners.push(listener);
  }

  onDelete(listener: OrgDeleteListener): void {
    this.deleteListeners.push(listener);
  }

  /**
   * Takes in an org document from the control plane's watch or from a write of this process. A revision
   * already seen is ignored. Resolves once the listeners have heard of it.
   */
  apply(entry: ControlEntry): Promise<void> {
    const slug = entry.key.slice(orgKey('').length);
    const known = this.documents.get(slug);
    if (known && known.revision >= entry.revision) return this.told;
    if ((this.deleted.get(slug) ?? 0) >= entry.revision) return this.told;
    if (isDeletedOrg(entry.value)) return this.applyDeletion(slug, entry.revision, known?.document);
    const document = entry.value as OrgDocument;
    this.documents.set(slug, { document, revision: entry.revision });
    for (const env of ENVIRONMENTS) {
      const credential = document.credentials[env];
      this.registry.set(credential.partnerId, { org: slug, environment: env, secretHash: credential.secretHash, writeKeyHash: credential.writeKey?.hash });
    }
    const previous = known?.document.org;
    this.told = this.told.then(async () => {
      for (const listener of this.listeners) {
        try {
          await listener(document.org, previous);
        } catch (error) {
          this.options.onListenerError?.(error);
        }
      }
    });
    return this.told;
  }

  /** The org is gone: its credentials stop working here at once, then the delete listeners run. */
  private applyDeletion(slug: string, revision: number, known: OrgDocument | undefined): Promise<void> {
    this.deleted.set(slug, revision);
    this.documents.delete(slug);
    for (const env of ENVIRONMENTS) if (known) this.registry.delete(known.credentials[env].partnerId);
    this.told = this.told.then(async () => {
      for (const listener of this.deleteListeners) {
        try {
          await listener(slug);
        } catch (error) {
          this.options.onListenerError?.(error);
        }
      }
    });
    return this.told;
  }

  async create(input: OrgCreate): Promise<{ org: Org; credentials: CredentialPair }> {
    if (RESERVED_SCHEMA_NAMES.has(input.slug)) {
      throw new AppError('invalid_request', `slug "${input.slug}" is reserved: trigger SQL names it as a schema`);
    }
    const now = this.ctx.clock.now();
    const contentFields = input.contentFields ?? [...DEFAULT_PROFILE_FIELDS];
    assertKnownFields(contentFields, new Set());
    assertTimes(input);
    const credentials = {} as CredentialPair;
    const document: OrgDocument = {
      org: {
        slug: input.slug,
        name: input.name,
        audienceApi: input.audienceApi ?? false,
        rateLimit: input.rateLimit ?? 50,
        currencySymbol: input.currencySymbol ?? '$',
        contentFields,
        notFoundStatus: input.notFoundStatus ?? 404,
        ...(input.retention ? { retention: input.retention } : {}),
        ...(input.frequencyCaps ? { frequencyCaps: input.frequencyCaps } : {}),
        ...(input.quietHours ? { quietHours: input.quietHours } : {}),
        ...(input.timeZone ? { timeZone: input.timeZone } : {}),
        createdAt: new Date(now).toISOString(),
        updatedAt: new Date(now).toISOString(),
      },
      credentials: {} as OrgDocument['credentials'],
    };
    for (const env of ENVIRONMENTS) {
      const credential = { partnerId: 'pk_' + randomBase62(this.ctx, 20), partnerSecret: 'ps_' + randomBase62(this.ctx, 40), writeKey: newWriteKey(this.ctx) };
      credentials[env] = credential;
      document.credentials[env] = {
        partnerId: credential.partnerId,
        secretHash: sha256Hex(credential.partnerSecret),
        createdAt: now,
        rotatedAt: null,
        writeKey: storedWriteKey(credential.writeKey, now),
      };
    }
    const entry = await createDocument(this.control, orgKey(input.slug), document).catch((error: unknown) => {
      if (!(error instanceof ControlConflictError)) throw error;
      if (this.deleted.has(input.slug)) {
        throw new AppError('org_exists', `slug "${input.slug}" belonged to an org that was deleted; a slug is never given to another org (events naming it may still be in the log): choose another`);
      }
      throw new AppError('org_exists', `org "${input.slug}" already exists`);
    });
    await this.apply(entry);
    return { org: document.org, credentials };
  }

  /** The slug belonged to an org that was deleted. */
  isDeleted(slug: string): boolean {
    return this.deleted.has(slug);
  }

  /** The org's settings from memory (hot paths). */
  cached(slug: string): Org | undefined {
    return this.documents.get(slug)?.document.org;
  }

  async get(slug: string): Promise<Org> {
    const org = this.cached(slug);
    if (!org) throw new AppError('org_not_found', `no org "${slug}"`);
    return org;
  }

  async list(): Promise<Org[]> {
    return [...this.documents.values()].map((d) => d.document.org).sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0));
  }

  /** Partner ids and write keys by their last characters (secrets are never shown again). */
  async credentialSummary(slug: string): Promise<Record<Environment, CredentialSummary>> {
    const credentials = this.documents.get(slug)?.document.credentials;
    if (!credentials) throw new AppError('org_not_found', `no org "${slug}"`);
    const summary = (env: Environment): CredentialSummary => {
      const { partnerId, writeKey } = credentials[env];
      return { partnerId, writeKey: writeKey ? { last4: writeKey.last4, createdAt: new Date(writeKey.createdAt).toISOString() } : null };
    };
    return { staging: summary('staging'), production: summary('production') };
  }

  async patch(slug: string, patch: OrgPatch): Promise<Org> {
    await this.get(slug);
    if (patch.contentFields) assertKnownFields(patch.contentFields, this.options.customFieldsOf?.(slug) ?? new Set());
    assertTimes(patch);
    const updatedAt = new Date(this.ctx.clock.now()).toISOString();
    const entry = await changeDocument<OrgDocument>(this.control, orgKey(slug), (current) => {
      if (!current) throw new AppError('org_not_found', `no org "${slug}"`);
      const { quietHours, ...rest } = patch;
      const org: Org = { ...current.org, ...rest, updatedAt };
      // null removes the org's quiet hours.
      if (quietHours === null) delete org.quietHours;
      else if (quietHours !== undefined) org.quietHours = quietHours;
      return { ...current, org };
    });
    await this.apply(entry);
    return (entry.value as OrgDocument).org;
  }

  /**
   * Deletes the org: its document becomes a tombstone (settings and credential hashes gone, the slug kept
   * from reuse). Partner credentials stop working at once on every process that sees the change; the
   * storage process that keeps the org deletes its database when it hears of it (storage-role.ts).
   */
  async remove(slug: string): Promise<DeletedOrgDocument> {
    await this.get(slug);
    const tombstone: DeletedOrgDocument = { deletedAt: new Date(this.ctx.clock.now()).toISOString() };
    const entry = await changeDocument<OrgDocument | DeletedOrgDocument>(this.control, orgKey(slug), (current) => {
      if (!current || isDeletedOrg(current)) throw new AppError('org_not_found', `no org "${slug}"`);
      return tombstone;
    });
    await this.apply(entry);
    return tombstone;
  }

  /** A new secret for the environment's partnerId; the old secret stops working at once (on every process once watched). */
  async rotate(slug: string, environment: Environment): Promise<PartnerCredential> {
    await this.get(slug);
    const partnerSecret = 'ps_' + randomBase62(this.ctx, 40);
    const rotatedAt = this.ctx.clock.now();
    const entry = await changeDocument<OrgDocument>(this.control, orgKey(slug), (current) => {
      if (!current) throw new AppError('org_not_found', `no org "${slug}"`);
      const credential = { ...current.credentials[environment], secretHash: sha256Hex(partnerSecret), rotatedAt };
      return { ...current, credentials: { ...current.credentials, [environment]: credential } };
    });
    await this.apply(entry);
    return { partnerId: (entry.value as OrgDocument).credentials[environment].partnerId, partnerSecret };
  }

  /**
   * A new write key for the environment (also for an org made before write keys, or one whose key was
   * revoked); the old key stops working at once (on every process once watched).
   */
  async rotateWriteKey(slug: string, environment: Environment): Promise<{ writeKey: string; last4: string }> {
    const writeKey = newWriteKey(this.ctx);
    await this.changeWriteKey(slug, environment, storedWriteKey(writeKey, this.ctx.clock.now()));
    return { writeKey, last4: writeKey.slice(-4) };
  }

  /** The environment's write key stops working at once; clients using it get 401 until given a new one. */
  async revokeWriteKey(slug: string, environment: Environment): Promise<void> {
    await this.changeWriteKey(slug, environment, null);
  }

  private async changeWriteKey(slug: string, environment: Environment, writeKey: StoredWriteKey | null): Promise<void> {
    await this.get(slug);
    const entry = await changeDocument<OrgDocument>(this.control, orgKey(slug), (current) => {
      if (!current) throw new AppError('org_not_found', `no org "${slug}"`);
      const credential = { ...current.credentials[environment], writeKey };
      return { ...current, credentials: { ...current.credentials, [environment]: credential } };
    });
    await this.apply(entry);
  }
}

/** SPEC 3: a content field the profile view does not have is refused. */
function assertKnownFields(fields: string[], customFields: ReadonlySet<string>): void {
  const known = new Set<string>([...DEFAULT_PROFILE_FIELDS, ...OPTIONAL_PROFILE_FIELDS]);
  const unknown = fields.filter((f) => !known.has(f) && !customFields.has(f));
  if (unknown.length > 0) {
    throw new AppError('invalid_request', `unknown content fields: ${unknown.join(', ')}`, {
      members: { errors: unknown.map((f) => ({ path: '/contentFields', message: `"${f}" is not a profile field` })) },
    });
  }
}

/** Quiet hours and the org's time zone: the schema checks their shape, this their values (a 400 naming the member). */
function assertTimes(input: { quietHours?: QuietHours | null; timeZone?: string }): void {
  const problem = input.quietHours ? quietHoursProblem(input.quietHours) : null;
  if (problem) throw new AppError('invalid_request', `quietHours: ${problem}`, { members: { errors: [{ path: '/quietHours', message: problem }] } });
  if (input.timeZone !== undefined && !isTimeZone(input.timeZone)) {
    const message = `${JSON.stringify(input.timeZone)} is not an IANA time zone (e.g. Europe/Lisbon, UTC)`;
    throw new AppError('invalid_request', `timeZone: ${message}`, { members: { errors: [{ path: '/timeZone', message }] } });
  }
}
