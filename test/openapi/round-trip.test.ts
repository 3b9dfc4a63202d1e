/**
 * The document's request schemas are the schemas the routes validate with (issue 40): bodies generated
 * from the served document's own schemas for /http/v1/collect and /http/v1/batch (fast-check, a fixed
 * seed), each judged by Ajv against that document, with a partner's real credentials put in. Every body
 * the document accepts is stored (200), every body it refuses is answered 412 with at least one reason
 * (path and message) — without context.debug.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { fitted } from './arbitraries.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
type Schema = Record<string, unknown>;
interface Document { paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: Schema }> } }>>; components: { schemas: Record<string, Schema> } }

const SEED = 20_261_129;
const RUNS = Number(process.env.ROUND_TRIP_RUNS ?? 150);

t.test('what the document accepts is stored, what it refuses is answered 412 with a reason', async (t) => {
  const h = await startTestApp(t);
  const doc = (await h.app.inject({ url: '/openapi.json' })).json() as Document;
  const { partnerId, partnerSecret } = (await h.createOrg('acme')).production;
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema(doc as never, 'openapi.json');
  const ctx = { components: doc.components.schemas };
  const tally: Record<string, { valid: number; invalid: number }> = {};
  const isObject = (b: unknown): b is object => b !== null && typeof b === 'object' && !Array.isArray(b);
  const eventSchema = doc.paths['/http/v1/collect']!.post!.requestBody.content['application/json']!.schema;
  const validEvent = ajv.compile({ $ref: 'openapi.json#/paths/~1http~1v1~1collect/post/requestBody/content/application~1json/schema' });
  /** An event the document accepts, as a batch member (no credentials: those are the batch's). */
  const acceptedEvent = fitted(eventSchema, ctx, 0)
    .filter(isObject)
    .map((event) => ({ ...event, partnerId, partnerSecret }))
    .filter((event) => validEvent(event))
    .map(({ partnerId: _id, partnerSecret: _secret, writeKey: _key, ...member }: Record<string, unknown>) => member);
  for (const path of ['/http/v1/collect', '/http/v1/batch']) {
    const schema = doc.paths[path]!.post!.requestBody.content['application/json']!.schema;
    const validate = ajv.compile({ $ref: `openapi.json#/paths/${path.replace(/\//g, '~1')}/post/requestBody/content/application~1json/schema` });
    const counts = (tally[path] = { valid: 0, invalid: 0 });
    // Credentials a partner has: the generated ones would only ever reach the 401.
    const withCredentials = (b: unknown) => ({ ...(b as object), partnerId, partnerSecret });
    const generated = fitted(schema, ctx, 0).filter(isObject).map(withCredentials);
    // A generated batch is almost never valid as a whole: batches of events the document accepts too.
    const body = path === '/http/v1/batch' ? fc.oneof(generated, fc.array(acceptedEvent, { minLength: 1, maxLength: 3 }).map((batch) => withCredentials({ batch }))) : generated;
    await fc.assert(
      fc.asyncProperty(body, async (request) => {
        const documented = validate(request);
        const answer = await h.app.inject({ method: 'POST', url: path, payload: request as object });
        const what = `${path} ${answer.statusCode} ${answer.body.slice(0, 300)} for ${JSON.stringify(request).slice(0, 600)}`;
        if (documented) {
          counts.valid++;
          if (answer.statusCode !== 200) throw new Error(`the document accepts it, the service did not: ${what}`);
        } else {
          counts.invalid++;
          const errors = answer.json().errors as Array<{ path: unknown; message: unknown }> | undefined;
          if (answer.statusCode !== 412) throw new Error(`the document refuses it (${ajv.errorsText(validate.errors)}), the service answered: ${what}`);
          if (!errors?.length || !errors.every((e) => typeof e.path === 'string' && typeof e.message === 'string' && e.message.length > 0)) throw new Error(`a 412 without its reasons: ${what}`);
        }
      }),
      { seed: SEED, numRuns: RUNS },
    );
  }
  t.comment(JSON.stringify(tally));
  for (const [path, counts] of Object.entries(tally)) t.ok(counts.valid > 0 && counts.invalid > 0, `${path}: both accepted and refused bodies were generated (${JSON.stringify(counts)})`);
});
