// `npm run db:new -- <name>`: writes prisma/migrations/<timestamp>_<name>/migration.sql with
// the SQL that takes the existing migrations to schema.prisma (computed offline on an
// in-memory PGlite by Prisma's schema engine in WebAssembly).
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { openDatabase } from "../core/db.js";
import { diffMigrationsToSchema, MIGRATIONS_DIR } from "../core/migrations.js";

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: npm run db:new -- <name>   (lower-case letters, digits and _)");
  process.exit(1);
}
const scratch = await openDatabase({ pgliteDataDir: "memory://" });
try {
  const sql = await diffMigrationsToSchema(scratch.migrationAdapter());
  if (sql === "") {
    console.log("db:new: schema.prisma and the migrations agree; nothing to write");
  } else {
    const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
    const dir = path.join(MIGRATIONS_DIR, `${stamp}_${name}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "migration.sql"), `${sql}\n`);
    console.log(`db:new: wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
  }
} finally {
  await scratch.close();
}
