/** The embedded control plane (control.duckdb) against the shared contract, and its upgrade from tables. */
import t from 'tap';
import { DuckDbDocuments } from '../../src/control/duckdb-documents.js';
import { controlContract } from './contract.js';

controlContract(t, 'duckdb', async (t) => {
  const dir = t.testdir();
  let current = await DuckDbDocuments.open(dir);
  t.teardown(() => current.close());
  return {
    first: current,
    second: current,
    async reopen() {
      await current.close();
      current = await DuckDbDocuments.open(dir);
      return current;
    },
  };
});
