/**
 * Every line the CLI prints passes through here. Answers carry what partners sent (event names, property
 * keys, client ids, quarantined bodies, a problem's detail that quotes them), and a terminal reads control
 * characters as commands: ESC (U+001B) or C1's CSI (U+009B) starts a sequence, and `ESC ] 52 ; c ; … BEL`
 * writes the clipboard, `ESC ] 0 ; … BEL` the window title, `ESC [ 2 J` clears the screen, CR overwrites
 * the line. JSON.stringify escapes C0 but leaves DEL, C1, U+2028/U+2029 and the bidi controls as they are.
 *
 * So each of those becomes its JSON escape, `\u001b`: visible in a table, and in JSON output the same value
 * (the characters can only stand inside a JSON string, where the escape means the character itself). The
 * set is the one schemas/event-parts.schema.json `controlFree` refuses in event names (a test holds them
 * equal), plus TAB; the line breaks between lines are the CLI's own and stay.
 */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A line on stdout (answers). */
export function printOut(text: string): void {
  process.stdout.write(`${terminalSafe(text)}\n`);
}

/** A line on stderr (errors, the next page's command). */
export function printErr(text: string): void {
  process.stderr.write(`${terminalSafe(text)}\n`);
}
