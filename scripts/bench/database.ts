// A PostgreSQL database of a benchmark's own, created on the server `serverUrl` names and dropped
// at the end: a run never meets an earlier run's rows (which would slow it down and make runs
// incomparable) and never touches the database the URL names.
import { randomBytes } from "node:crypto";
import pg from "pg";

export async function freshBenchDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(`cannot reach PostgreSQL at BENCH_DATABASE_URL (${(error as Error).message})`);
  }
  const name = `bench_${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
  await admin.query(`CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`).catch(() => {});
      await admin.end();
    },
  };
}
