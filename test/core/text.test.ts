// Rows sent to PostgreSQL as one JSON parameter (json_to_recordset): a lone surrogate, which the
// database refuses as an escape, arrives as U+FFFD, as it does through a text parameter.
import { expect } from "chai";
import { jsonForPostgres } from "../../core/text.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

describe(`jsonForPostgres (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(async () => {
    await db?.destroy();
  });

  const read = (json: string) =>
    db.prisma.$queryRaw<{ text: string; nested: unknown }[]>`
      SELECT r."text", r."nested" FROM json_to_recordset(${json}::json) AS r ("text" text, "nested" jsonb)`;

  it("is JSON.stringify's text when every string is well-formed", async () => {
    const rows = [{ text: "plain \\ud800 text, 😀 and ñ", nested: { deep: ["a", 1, null] } }];
    expect(jsonForPostgres(rows)).to.equal(JSON.stringify(rows));
    expect(await read(jsonForPostgres(rows))).to.deep.equal(rows);
  });

  it("writes a lone surrogate as U+FFFD, at any depth, where the plain text is refused", async () => {
    const rows = [{ text: "a\ud800b", nested: { deep: ["\udfff"] } }];
    let refused: unknown;
    await read(JSON.stringify(rows)).catch((error: unknown) => {
      refused = error;
    });
    expect(refused, "PostgreSQL refuses an escaped lone surrogate").to.be.instanceOf(Error);
    expect(await read(jsonForPostgres(rows))).to.deep.equal([{ text: "a\ufffdb", nested: { deep: ["\ufffd"] } }]);
  });
});
