/**
 * Loaded (`--import`) into each service and CLI process a test starts: the process ends once the test
 * process that started it is gone. tap ends a file that runs into its timeout with SIGKILL, so none of
 * its teardowns runs, and a service it started went on without it (seen once: a server of
 * damaged-org.test.ts alive 20 minutes after its file, with its storage process, taking CPU from every
 * file after it). SIGKILL, as the teardowns end them: the storage process then ends on its disconnect.
 */
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL');
}, 250).unref();
