// The pages of a list (domain/pagination.ts, D-113), on the in-memory listing the loans use,
// against a reference: every cursor, every side, several page sizes, a filter that leaves some
// items out (a cursor may name one of those).
import { expect } from "chai";
import { AppError } from "../../domain/errors.js";
import { listingInMemory, type PageRequest, paginate } from "../../domain/pagination.js";

type Item = { id: string; kept: boolean };
const items = (n: number): Item[] => Array.from({ length: n }, (_, i) => ({ id: `item_${i}`, kept: i % 3 !== 1 }));
const kept = (item: Item) => item.kept;
const ids = (list: Item[]) => list.map((item) => item.id);
const startingAfter = (id: string, limit: number): PageRequest => ({ limit, cursor: { id, side: "after", field: "starting_after" } });
const endingBefore = (id: string, limit: number): PageRequest => ({ limit, cursor: { id, side: "before", field: "ending_before" } });

describe("paginate: pages of a list beside an item, and at an offset", () => {
  const all = items(23);
  const listed = all.filter(kept);

  it("starting_after: the items after the cursor in the list's order, hasMore and the page's offset", async () => {
    for (const limit of [1, 3, 5, 23, 30]) {
      for (const [index, cursor] of all.entries()) {
        const rest = listed.filter((item) => all.indexOf(item) > index);
        const page = await paginate(startingAfter(cursor.id, limit), listingInMemory(all, kept));
        expect(ids(page.data), `${cursor.id} limit ${limit}`).to.deep.equal(ids(rest.slice(0, limit)));
        expect(page.pagination).to.deep.equal({
          total: listed.length,
          limit,
          offset: listed.length - rest.length,
          hasMore: rest.length > limit,
        });
      }
    }
  });

  it("ending_before: the items just before the cursor, still newest first; hasMore says whether more come before them", async () => {
    for (const limit of [1, 3, 5, 23, 30]) {
      for (const [index, cursor] of all.entries()) {
        const ahead = listed.filter((item) => all.indexOf(item) < index);
        const page = await paginate(endingBefore(cursor.id, limit), listingInMemory(all, kept));
        const expected = ahead.slice(Math.max(0, ahead.length - limit));
        expect(ids(page.data), `${cursor.id} limit ${limit}`).to.deep.equal(ids(expected));
        expect(page.pagination).to.deep.equal({
          total: listed.length,
          limit,
          offset: ahead.length - expected.length,
          hasMore: ahead.length > limit,
        });
      }
    }
  });

  it("at an offset: the spec's page, unchanged", async () => {
    const page = await paginate({ limit: 4, offset: 6 }, listingInMemory(all, kept));
    expect(ids(page.data)).to.deep.equal(ids(listed.slice(6, 10)));
    expect(page.pagination).to.deep.equal({ total: listed.length, limit: 4, offset: 6, hasMore: true });
    const last = await paginate({ limit: 4, offset: 12 }, listingInMemory(all, kept));
    expect(ids(last.data)).to.deep.equal(ids(listed.slice(12)));
    expect(last.pagination.hasMore).to.equal(false);
  });

  it("a walk by cursor sees every item once while new ones arrive at the top; by offset it repeats one per arrival", async () => {
    const list = items(10).map((item) => ({ ...item, kept: true }));
    const byCursor: string[] = [];
    let page = await paginate({ limit: 3, offset: 0 }, listingInMemory(list, kept));
    for (let arrival = 0; ; arrival++) {
      byCursor.push(...ids(page.data));
      if (!page.pagination.hasMore) break;
      list.unshift({ id: `new_${arrival}`, kept: true });
      page = await paginate(startingAfter(page.data.at(-1)!.id, 3), listingInMemory(list, kept));
    }
    expect(byCursor).to.deep.equal(ids(items(10)));

    const again = items(10).map((item) => ({ ...item, kept: true }));
    const byOffset: string[] = [];
    for (let offset = 0, arrival = 0; ; arrival++) {
      const at = await paginate({ limit: 3, offset }, listingInMemory(again, kept));
      byOffset.push(...ids(at.data));
      if (!at.pagination.hasMore) break;
      offset += at.data.length;
      again.unshift({ id: `new_${arrival}`, kept: true });
    }
    expect(new Set(byOffset).size).to.be.lessThan(byOffset.length);
  });

  it("a cursor that names no item of the caller's list is a VALIDATION_ERROR on its field", async () => {
    for (const request of [startingAfter("nope", 5), endingBefore("nope", 5)]) {
      const refusal = await paginate(request, listingInMemory(all, kept)).catch((error: unknown) => error);
      expect(refusal).to.be.instanceOf(AppError);
      expect(refusal).to.include({ code: "VALIDATION_ERROR" });
      expect((refusal as AppError).details).to.deep.equal({ field: request.cursor!.field, reason: "no item with this id" });
    }
  });
});
