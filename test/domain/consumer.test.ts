// The outbox consumers' loop (domain/events/consumer.ts): pages applied in one transaction each,
// a bad event isolated from its page, concurrent runs taking each event once, and the cursor
// that bounds a consumer's reads to the history it has not finished.
import { expect } from "chai";
import { pino } from "pino";
import { openDatabase } from "../../core/db.js";
import type { Logger } from "../../core/logger.js";
import type { Db, Tx } from "../../domain/db.js";
import {
  type ConsumedEvent,
  consumeEventPages,
  consumeEvents,
  REREAD_FROM_CURSOR_MS,
  SETTLE_EVERY_MS,
  settleCursor,
} from "../../domain/events/consumer.js";
import { domainEvent, recordEvents } from "../../domain/events/outbox.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";
import { sleep } from "../helpers/waiting.js";

const silent: Logger = pino({ level: "silent" });
const NOW = new Date("2026-03-01T00:00:00.000Z");
type LevelUp = ConsumedEvent<"user.level_up">;

describe(`outbox consumers (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let written = 0;

  /** `count` level-up events of one user, in one outbox transaction, levels named `<prefix><i>`. */
  async function record(prefix: string, count: number): Promise<void> {
    const events = Array.from({ length: count }, (_, i) =>
      domainEvent({
        type: "user.level_up",
        userId: "consumer-user",
        data: { userId: "consumer-user", level: `${prefix}${i}`, previousLevel: "x", xp: i, timestamp: NOW.toISOString() },
        dedupeKey: `consumer-test:${prefix}:${i}`,
        now: new Date(NOW.getTime() + written++),
      }),
    );
    await db.prisma.$transaction((tx) => recordEvents(tx, events));
  }
  const cursorOf = async () => (await db.prisma.consumerCursor.findUnique({ where: { consumer: "notifications" } }))?.xid ?? 0n;
  const xidOf = async (prefix: string, i: number) =>
    (await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: `consumer-test:${prefix}:${i}` } })).xid;
  const seqOf = async (prefix: string, i: number) =>
    (await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: `consumer-test:${prefix}:${i}` } })).seq;
  const takenCount = () => db.prisma.consumedEvent.count({ where: { consumer: "notifications" } });
  /** A run of the `notifications` consumer over level-up events, a page at a time through `applyBatch`. */
  const consume = (
    applyBatch: (tx: Tx, events: LevelUp[]) => Promise<void>,
    options: { batchSize?: number; logger?: Logger } = {},
    on: Db = db,
  ) => consumeEvents(on, { consumer: "notifications", types: ["user.level_up"], now: NOW, logger: silent, applyBatch, ...options });

  /** A run of `notifications` in insertion order, a page at a time, noting the levels it takes in `levels`. */
  const consumeInOrder =
    (levels: string[], { batchSize }: { batchSize?: number } = {}) =>
    (on: Db = db) =>
      consumeEvents(on, {
        consumer: "notifications",
        types: ["user.level_up"],
        now: NOW,
        logger: silent,
        order: "insertion",
        ...(batchSize ? { batchSize } : {}),
        applyBatch: async (_tx, events) => {
          levels.push(...events.map((event) => event.data.level));
        },
      });

  beforeEach(async () => {
    db = await createTestDatabase();
    written = 0;
  });
  afterEach(async () => {
    await db?.destroy();
  });

  it("applies a page of events in one transaction, in order, each once", async () => {
    await record("a", 7);
    const pages: string[][] = [];
    const run = () =>
      consume(
        async (tx, events) => {
          // Inside the page's transaction: its markers are visible there.
          expect(await tx.consumedEvent.count({ where: { eventId: { in: events.map((event) => event.id) } } })).to.equal(events.length);
          pages.push(events.map((event) => event.data.level));
        },
        { batchSize: 3 },
      );
    expect(await run()).to.equal(7);
    expect(pages).to.deep.equal([["a0", "a1", "a2"], ["a3", "a4", "a5"], ["a6"]]);
    expect(await run()).to.equal(0);
    expect(pages).to.have.length(3);
  });

  it("applies a page whose batch throws event by event: the bad one stays pending, the others are taken", async () => {
    await record("b", 4);
    const lines: { msg: string; eventId?: string }[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let broken = true;
    const applied: string[] = [];
    const run = () =>
      consume(
        async (tx, events) => {
          if (broken && events.some((event) => event.data.level === "b2")) throw new Error("template missing");
          // A write of the page's: rolled back with it when the page fails.
          await tx.$executeRaw`SELECT 1`;
          applied.push(...events.map((event) => event.data.level));
        },
        { logger },
      );
    expect(await run()).to.equal(3);
    expect(applied).to.deep.equal(["b0", "b1", "b3"]);
    const bad = await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: "consumer-test:b:2" } });
    expect(lines.map((line) => [line.msg, line.eventId])).to.deep.equal([["event not applied; left for the next run", bad.id]]);
    broken = false;
    expect(await run()).to.equal(1);
    expect(applied).to.deep.equal(["b0", "b1", "b3", "b2"]);
  });

  it("reads and decodes the data of the dataFor types only: the others come without it", async () => {
    await record("d", 2);
    // The first one's data no longer matches the catalogue (an older version's).
    await db.prisma.$executeRaw`UPDATE "DomainEvent" SET "data" = '{"stale": true}'::jsonb WHERE "dedupeKey" = 'consumer-test:d:0'`;
    const run = (dataFor: "user.level_up"[] | undefined) => {
      const seen: unknown[] = [];
      const invalid: string[] = [];
      const taken = consumeEvents(db, {
        consumer: "notifications",
        types: ["user.level_up"],
        now: NOW,
        logger: silent,
        ...(dataFor ? { dataFor } : {}),
        onInvalid: (event) => invalid.push(event.id),
        applyBatch: async (_tx, events) => {
          seen.push(...events.map((event) => event.data));
        },
      });
      return { taken, seen, invalid };
    };
    const without = run([]);
    expect(await without.taken).to.equal(2);
    expect(without.seen).to.deep.equal([undefined, undefined]);
    expect(without.invalid).to.deep.equal([]);
    // With its data read, the stale one is reported and taken without effect; the other decoded.
    await record("e", 2);
    await db.prisma.$executeRaw`UPDATE "DomainEvent" SET "data" = '{"stale": true}'::jsonb WHERE "dedupeKey" = 'consumer-test:e:0'`;
    const withData = run(["user.level_up"]);
    expect(await withData.taken).to.equal(2);
    expect(withData.seen).to.have.length(1);
    expect(withData.seen[0]).to.include({ level: "e1" });
    expect(withData.invalid).to.deep.equal([
      (await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: "consumer-test:e:0" } })).id,
    ]);
  });

  it("two runs at once take every event exactly once", async () => {
    await record("c", 400);
    // On PostgreSQL a second pool, as a second process has; PGlite has one connection, on which
    // the two runs' transactions take turns.
    const other = usingPostgres ? await openDatabase({ databaseUrl: db.url! }) : { ...db, close: async () => {} };
    try {
      const applied: string[] = [];
      const run = (on: Db) =>
        consume(
          async (_tx, events) => {
            applied.push(...events.map((event) => event.data.level));
          },
          { batchSize: 25 },
          on,
        );
      // Each keeps going until nothing is left: a run that finds the other's page in progress returns 0 at once.
      const drain = async (on: Db) => {
        let total = 0;
        while ((await takenCount()) < 400) total += await run(on);
        return total;
      };
      const [first, second] = await Promise.all([drain(db), drain(other)]);
      expect(first + second).to.equal(400);
      expect(applied).to.have.length(400);
      expect(new Set(applied).size).to.equal(400);
    } finally {
      await other.close();
    }
  });

  it("moves the cursor over settled events only: never past a pending one, never past a transaction still running", async () => {
    await record("d", 3);
    let failing = "d1";
    const run = () =>
      consume(async (_tx, events) => {
        if (events.some((event) => event.data.level === failing)) throw new Error("not yet");
      });
    expect(await run()).to.equal(2);
    // The pending event holds it at its transaction (the three were written by one).
    expect(await settleCursor(db, "notifications", ["user.level_up"], NOW)).to.equal(await xidOf("d", 1));
    expect(await cursorOf()).to.equal(await xidOf("d", 1));

    failing = "";
    expect(await run()).to.equal(1);
    // Nothing pending: past every transaction that has ended.
    await settleCursor(db, "notifications", ["user.level_up"], NOW);
    expect(await cursorOf()).to.be.above(await xidOf("d", 2));
    // Events of types the consumer does not take move it too.
    await db.prisma.$transaction((tx) =>
      recordEvents(tx, [
        domainEvent({
          type: "user.badge_earned",
          userId: "consumer-user",
          data: { userId: "consumer-user", badgeId: "first", name: "First", earnedAt: NOW.toISOString() },
          dedupeKey: "consumer-test:badge",
          now: NOW,
        }),
      ]),
    );
    await settleCursor(db, "notifications", ["user.level_up"], NOW);
    const badge = await db.prisma.domainEvent.findUniqueOrThrow({ where: { dedupeKey: "consumer-test:badge" } });
    expect(await cursorOf()).to.be.above(badge.xid);
    // It never moves back (here from where it could never have been).
    await db.prisma.consumerCursor.update({ where: { consumer: "notifications" }, data: { xid: 1n << 40n } });
    await settleCursor(db, "notifications", ["user.level_up"], NOW);
    expect(await cursorOf()).to.equal(1n << 40n);
  });

  // PGlite has one connection: no other session can hold a transaction open beside the consumer's.
  if (usingPostgres) {
    it("takes an event whose transaction was still running when the cursor moved, once it commits", async () => {
      const other = await openDatabase({ databaseUrl: db.url! });
      const levels: string[] = [];
      const run = consumeInOrder(levels);
      try {
        // Another process writes an event and keeps its transaction open...
        let commit!: () => void;
        const committing = new Promise<void>((resolve) => {
          commit = resolve;
        });
        let written!: (xid: bigint) => void;
        const wrote = new Promise<bigint>((resolve) => {
          written = resolve;
        });
        const writer = other.prisma.$transaction(
          async (tx) => {
            await recordEvents(tx, [
              domainEvent({
                type: "user.level_up",
                userId: "consumer-user",
                data: { userId: "consumer-user", level: "slow", previousLevel: "x", xp: 1, timestamp: NOW.toISOString() },
                dedupeKey: "consumer-test:slow:0",
                now: NOW,
              }),
            ]);
            const [row] = await tx.$queryRaw<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS "xid"`;
            written(BigInt(row!.xid));
            await committing;
          },
          { timeout: 30_000 },
        );
        const slowXid = await Promise.race([wrote, writer.then(() => -1n)]);
        // ...while later ones commit and are taken, and the cursor moves as far as it may.
        await record("h", 2);
        expect(await run()).to.equal(2);
        await settleCursor(db, "notifications", ["user.level_up"], NOW);
        expect(await cursorOf()).to.be.at.most(slowXid);
        commit();
        await writer;
        // The read from the cursor finds it (a later seq was read on from already).
        await sleep(REREAD_FROM_CURSOR_MS);
        expect(await run()).to.equal(1);
        expect(levels).to.deep.equal(["h0", "h1", "slow"]);
        await settleCursor(db, "notifications", ["user.level_up"], NOW);
        expect(await cursorOf()).to.be.above(slowXid);
      } finally {
        await other.close();
      }
    });
  }

  it("reads only above the cursor, and takes an event whose seq was renewed (a fact back after a rollback)", async () => {
    await record("e", 2);
    const levels: string[] = [];
    const run = () =>
      consume(async (_tx, events) => {
        levels.push(...events.map((event) => event.data.level));
      });
    expect(await run()).to.equal(2);
    await settleCursor(db, "notifications", ["user.level_up"], NOW);
    expect(await cursorOf()).to.be.above(await xidOf("e", 1));
    // Another consumer took e0 and a rollback removed it: this one's marker is gone with the
    // reorg's rewrite, and the fact is reverted (the indexer keeps it for the consumer that took it).
    const e0 = await seqOf("e", 0);
    await db.prisma.consumedEvent.deleteMany({ where: { consumer: "notifications" } });
    await db.prisma.domainEvent.update({ where: { seq: e0 }, data: { revertedAt: NOW } });
    expect(await run()).to.equal(0);
    // The log comes back: the indexer clears revertedAt and gives the event a new seq and its own transaction's id (indexer/store.ts).
    await db.prisma.$executeRaw`
      UPDATE "DomainEvent" SET "revertedAt" = NULL, "seq" = nextval(pg_get_serial_sequence('"DomainEvent"', 'seq')),
          "xid" = pg_current_xact_id()::text::bigint
        WHERE "seq" = ${e0}`;
    expect(await run()).to.equal(1);
    expect(levels).to.deep.equal(["e0", "e1", "e0"]);
  });

  it("in insertion order, reads on from where its last run ended, and takes an event that committed behind it at the next read from the cursor", async () => {
    await record("f", 3);
    const levels: string[] = [];
    const run = consumeInOrder(levels);
    // The last event's seq far ahead: the next event recorded gets a lower one, as an event does
    // whose transaction commits after a later one's was read.
    await db.prisma.$executeRaw`UPDATE "DomainEvent" SET "seq" = 1000000 WHERE "seq" = ${await seqOf("f", 2)}`;
    expect(await run()).to.equal(3);
    await record("late", 1);
    expect(await seqOf("late", 0)).to.be.below(1_000_000n);
    // Read on from seq 1000000: the late event is not seen yet...
    expect(await run()).to.equal(0);
    // ...and is taken once the process reads from the cursor again.
    await sleep(REREAD_FROM_CURSOR_MS);
    expect(await run()).to.equal(1);
    expect(levels).to.deep.equal(["f0", "f1", "f2", "late0"]);
  });

  it("leaves the cursor where it is while a backlog flows (a run that took a full page), and the run after it moves it past", async () => {
    await record("k", 5);
    const levels: string[] = [];
    const run = consumeInOrder(levels, { batchSize: 2 });
    const before = await cursorOf();
    // Another test's run may have moved it within the second: a move is due.
    await sleep(SETTLE_EVERY_MS);
    expect(await run()).to.equal(5);
    expect(await cursorOf()).to.equal(before);
    expect(await run()).to.equal(0);
    expect(await cursorOf()).to.be.above(await xidOf("k", 4));
    expect(levels).to.deep.equal(["k0", "k1", "k2", "k3", "k4"]);
  });

  it("in insertion order, processes taking turns at a partition read on from where either last read it: none reads again what the other took", async () => {
    await record("h", 6);
    // Another process: its own memory of where it read to (keyed by its Db), its page reads counted.
    let rowsRead = 0;
    const bound = <T extends object>(target: T, prop: string | symbol) => {
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    };
    const counted = <T extends object>(tx: T) =>
      new Proxy(tx, {
        get(target, prop) {
          const value = bound(target, prop);
          if (prop !== "$queryRawUnsafe") return value;
          return async (...args: unknown[]) => {
            const rows = (await value(...args)) as unknown[];
            rowsRead += rows.length;
            return rows;
          };
        },
      });
    const prisma = new Proxy(db.prisma, {
      get(target, prop) {
        if (prop !== "$transaction") return bound(target, prop);
        return (work: (tx: Tx) => Promise<unknown>, options?: object) => target.$transaction((tx) => work(counted(tx)), options);
      },
    });
    const other: Db = { prisma, sql: db.sql };
    const levels: string[] = [];
    const run = consumeInOrder(levels, { batchSize: 2 });
    expect(await run(db)).to.equal(6);
    // The other's first run reads from the cursor: nothing untaken.
    expect(await run(other)).to.equal(0);
    expect(rowsRead).to.equal(0);
    await record("i", 4);
    expect(await run(db)).to.equal(4);
    // Reading on, it starts where this process read to, not where it last read itself.
    expect(await run(other)).to.equal(0);
    expect(rowsRead).to.equal(0);
    const [partition] = await db.prisma.consumerPartition.findMany({ where: { consumer: "notifications" } });
    expect(partition).to.include({ partition: "0/1", readTo: await seqOf("i", 3) });
    // And what it finds first is its to take.
    await record("j", 3);
    expect(await run(other)).to.equal(3);
    expect(rowsRead).to.equal(3);
    expect(levels).to.deep.equal(["h0", "h1", "h2", "h3", "h4", "h5", "i0", "i1", "i2", "i3", "j0", "j1", "j2"]);
  });

  // PGlite has one connection: no other session can hold a page lock there.
  if (usingPostgres) {
    /** Another process's advisory lock (class, hashtext(name)), held in an open transaction until `release()`. */
    async function holdLock(other: Db, lockClass: number, name: string) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => {
        release = resolve;
      });
      let locked!: () => void;
      const held = new Promise<void>((resolve) => {
        locked = resolve;
      });
      const holder = other.prisma.$transaction(
        async (tx) => {
          await tx.$executeRaw`SELECT pg_advisory_xact_lock(${lockClass}::int, hashtext(${name}))`;
          locked();
          await released;
        },
        { timeout: 30_000 },
      );
      await Promise.race([held, holder]);
      return { release, holder };
    }

    it("moves a consumer's cursor in one process at a time: one that finds another moving it answers the cursor as it stands", async () => {
      await record("m", 2);
      const before = await cursorOf();
      const other = await openDatabase({ databaseUrl: db.url! });
      try {
        // Another process moving the cursor: its lock, held in an open transaction.
        const { release, holder } = await holdLock(other, 24_052, "notifications");
        expect(await settleCursor(db, "notifications", ["user.level_up"], NOW)).to.equal(before);
        expect(await cursorOf()).to.equal(before);
        release();
        await holder;
        // Both events pending: the cursor moves up to the first's transaction.
        expect(await settleCursor(db, "notifications", ["user.level_up"], NOW)).to.equal(await xidOf("m", 0));
      } finally {
        await other.close();
      }
    });

    it("says when another process holds a partition, and takes the others", async () => {
      await record("g", 40);
      const other = await openDatabase({ databaseUrl: db.url! });
      const applied: string[] = [];
      const run = () =>
        consumeEventPages(db, {
          consumer: "notifications",
          types: ["user.level_up"],
          now: NOW,
          logger: silent,
          order: "insertion",
          partitions: 2,
          applyBatch: async (_tx, events) => {
            applied.push(...events.map((event) => event.data.level));
          },
        });
      try {
        // Another process on partition 0: its page lock, held in an open transaction.
        const { release, holder } = await holdLock(other, 24_051, "notifications:0");
        const first = await run();
        expect(first.contended).to.equal(true);
        expect(first.applied).to.be.above(0).and.below(40);
        release();
        await holder;
        const second = await run();
        expect(second).to.deep.equal({ applied: 40 - first.applied, contended: false });
        expect(new Set(applied).size).to.equal(40);
      } finally {
        await other.close();
      }
    });
  }
});
