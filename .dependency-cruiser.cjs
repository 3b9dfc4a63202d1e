/**
 * The rooms of src/ from the bottom up (docs/design.md, "A map of src/"). A module may import its own room
 * and rooms on a lower rank, never one on its own rank or above: arrows point down, so no circle between
 * rooms can form. Checked by `npm run depcheck` and by test/architecture.test.ts in the suite.
 */
const RANKS = [
  ['generated'],
  ['core'],
  ['http', 'db', 'nats'],
  ['ops'],
  ['ratelimit'],
  ['control'],
  ['events/log', 'events/plans'],
  ['events/collect', 'events/compaction'],
  ['events/profiles'],
  ['storage'],
  ['reactions/triggers', 'reactions/channels', 'reactions/consent'],
  // The flows' rooms (docs/design.md, "Inside reactions/flows"): pure rules at the bottom, then the one
  // owner per table and the renderer, then sending and the reports, and the run (turns, the decision
  // pipeline and the four sources that feed it) on top.
  ['reactions/flows/rules', 'reactions/alerts'],
  ['reactions/flows/store', 'reactions/flows/render'],
  ['reactions/flows/send', 'reactions/flows/reports'],
  ['reactions/flows/run'],
  ['backup', 'cluster', 'openapi', 'privacy'],
  ['routes'],
  ['plugins'],
  ['roles'],
  ['cli'],
  ['entry', 'tools'],
];
/** The console is its own room: a browser app that shares only the server's vocabulary. */
const CONSOLE_MAY_IMPORT = ['generated', 'core'];

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const pathOf = (room) => (room === 'entry' ? '^src/[^/]+$' : `^src/${escape(room)}/`);
const rankOf = new Map(RANKS.flatMap((rooms, rank) => rooms.map((room) => [room, rank])));
const rooms = [...rankOf.keys()];

const upward = rooms.map((room) => ({
  name: `down-from-${room}`,
  comment: `src/${room === 'entry' ? '*.ts' : room} may import only rooms below it (.dependency-cruiser.cjs, RANKS)`,
  severity: 'error',
  from: { path: pathOf(room) },
  to: { path: rooms.filter((other) => other !== room && rankOf.get(other) >= rankOf.get(room)).map(pathOf) },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'console-room',
      comment: 'the console imports only the generated types and core vocabulary of the server',
      severity: 'error',
      from: { path: '^src/console/' },
      to: { path: '^src/', pathNot: ['^src/console/', ...CONSOLE_MAY_IMPORT.map(pathOf)] },
    },
    {
      name: 'no-circular',
      comment: 'modules import each other in one direction only',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'every-file-in-a-room',
      comment: 'a new folder under src/ gets a rank in RANKS first',
      severity: 'error',
      from: { path: '^src/', pathNot: [...rooms.map(pathOf), '^src/console/'] },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.tsx', '.js', '.mjs'] },
  },
};
