import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

// One rule for reaching the database (docs/adding-a-domain.md): a domain's tables are read and
// written in its `repo.ts`, and the services call the repository. The stores of the machinery
// are the exceptions: the job queue's, the outbox's, the processes' and core's own tables (the
// indexer is a store as a whole, and outside these folders). A file still waiting to move is
// named below; the list only shrinks: a file that no longer touches tables must leave it.
const ROOT = path.resolve(import.meta.dirname, "..", "..");
const FOLDERS = ["domain", "api", "worker"];
/** A statement: Prisma's model API, its raw queries, or the plain driver. */
const TOUCHES_TABLES =
  /\.\$queryRaw|\.\$executeRaw|\bsql\.query\(|\bsql\.transaction\(|\b(?:prisma|tx|db)\.[a-z][a-zA-Z]+\s*\.(?:find|create|update|delete|upsert|count|aggregate|groupBy)/;
/** A statement written as a string: Prisma's unsafe raw API, or the driver's query with text. */
const STRING_STATEMENT = /\$queryRawUnsafe|\$executeRawUnsafe|\bsql\.query\s*[<(]|\bepochMs\b/;
const STORES = ["domain/jobs/queue.ts", "domain/events/consumer.ts", "domain/events/outbox.ts", "domain/processes/presence.ts"];
/** Files still waiting to move: none since the batched relay (its tables are in domain/transactions/repo.ts). */
const PENDING: string[] = [];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder).flatMap((name) => {
    const file = path.join(folder, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return file.endsWith(".ts") ? [file] : [];
  });
}

const touchingTables = () =>
  FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder)))
    .filter((file) => TOUCHES_TABLES.test(readFileSync(file, "utf8")))
    .map((file) => path.relative(ROOT, file).split(path.sep).join("/"));

describe("one rule for the database", () => {
  it("tables are touched only in repositories and the machinery's stores (and the files still to move)", () => {
    const outside = touchingTables().filter((file) => !file.endsWith("/repo.ts") && !STORES.includes(file));
    expect(outside.sort()).to.deep.equal([...PENDING].sort());
  });

  it("inside them, two styles: Prisma's model API and tagged SQL, never a string statement", () => {
    const stringStatements = [...FOLDERS, "core"]
      .flatMap((folder) => sourceFiles(path.join(ROOT, folder)))
      .filter((file) => STRING_STATEMENT.test(readFileSync(file, "utf8")))
      .map((file) => path.relative(ROOT, file).split(path.sep).join("/"));
    // The indexer (outside these folders) builds its statements from its table definitions.
    expect(stringStatements).to.deep.equal([]);
    for (const sample of [`db.sql.query<Row>("SELECT 1")`, "tx.$queryRawUnsafe(text)", "prisma.$executeRawUnsafe(text)"]) {
      expect(STRING_STATEMENT.test(sample), sample).to.equal(true);
    }
  });

  it("finds the statements it checks (the scan is not vacuous)", () => {
    const files = touchingTables();
    expect(files).to.include("domain/loans/repo.ts");
    expect(files).to.include("domain/jobs/queue.ts");
    expect(files.filter((file) => file.endsWith("/repo.ts")).length).to.be.at.least(10);
  });
});
