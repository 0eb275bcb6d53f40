import { expect } from "chai";
import { plainTransaction, rawTxOf } from "../../core/db.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

// One statement reads the same whichever runs it (docs/adding-a-domain.md): Prisma's raw
// statements and the plain driver decode an int8 as a bigint and a `timestamp` as UTC, and send a
// Date as UTC, whatever the process's time zone.
describe(`the plain driver and Prisma read and write alike (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  const zone = process.env.TZ;
  const beyondNumbers = 2n ** 60n + 1n;
  const at = new Date("2026-01-02T03:04:05.678Z");

  before(async () => {
    db = await createTestDatabase();
    // A zone off UTC by a fraction of an hour, so a local reading anywhere would show.
    process.env.TZ = "Asia/Kolkata";
  });
  after(async () => {
    if (zone === undefined) delete process.env.TZ;
    else process.env.TZ = zone;
    await db?.destroy();
  });

  it("reads an int8 as a bigint and a timestamp as its UTC instant, through Prisma and the driver", async () => {
    expect(new Date(0).getTimezoneOffset()).to.equal(-330);
    await db.prisma.serviceClock.create({ data: { id: 1, offsetMs: beyondNumbers, updatedAt: at } });
    const read = (tx: Pick<typeof db.prisma, "$queryRaw">) =>
      tx.$queryRaw<{ offsetMs: bigint; updatedAt: Date }[]>`SELECT "offsetMs", "updatedAt" FROM "ServiceClock" WHERE "id" = 1`;
    const expected = [{ offsetMs: beyondNumbers, updatedAt: at }];
    expect(await read(db.prisma)).to.deep.equal(expected);
    expect(await read(rawTxOf(db.sql.query))).to.deep.equal(expected);
    expect(await plainTransaction(db, (tx) => read(tx))).to.deep.equal(expected);
  });

  it("sends a Date as its UTC instant through the driver, as Prisma does", async () => {
    const later = new Date("2026-07-08T09:10:11.123Z");
    await rawTxOf(db.sql.query).$executeRaw`UPDATE "ServiceClock" SET "updatedAt" = ${later}::timestamp(3) WHERE "id" = 1`;
    expect((await db.prisma.serviceClock.findUniqueOrThrow({ where: { id: 1 } })).updatedAt.toISOString()).to.equal(later.toISOString());
  });
});
