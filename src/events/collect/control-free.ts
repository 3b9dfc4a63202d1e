/**
 * Names partners send — a custom event's `properties.eventName`, a Segment track's `event` — hold no
 * control character: they are printed in operators' terminals (`audiencectl events types`) and lists, where
 * `ESC ] 52 ; c ; … BEL` writes the clipboard and `ESC [ 2 J` clears the screen. Which characters is
 * schemas/event-parts.schema.json `controlFree`; this file only compiles it for the Segment path (whose
 * names are not checked by a schema, being longer than 38 before their snake case) and says in words what
 * ajv says as a pattern.
 */
import type { ErrorObject } from 'ajv/dist/2020.js';
import { validatorFor } from '../../core/schemas.js';

const controlFree = validatorFor<string>('event-parts.schema.json', '#/$defs/controlFree');
const PATTERN = (controlFree.schema as { pattern: string }).pattern;

export const CONTROL_CHARACTERS_MESSAGE =
  'must not contain control characters: C0, DEL and C1 (U+0000–U+001F, U+007F–U+009F, which start terminal escape sequences), ' +
  'line or paragraph separators (U+2028, U+2029) or bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069); send the name as plain text';

export function isControlFree(text: string): boolean {
  return controlFree(text) === true;
}

/** ajv's `must match pattern "^[^\u0000-…]*$"`, in words. */
export function explainControlFree(e: ErrorObject): ErrorObject {
  return e.keyword === 'pattern' && (e.params as { pattern?: string }).pattern === PATTERN ? { ...e, message: CONTROL_CHARACTERS_MESSAGE } : e;
}
