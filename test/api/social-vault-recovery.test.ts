import { randomUUID } from "node:crypto";
import { expect } from "chai";
import { getAddress } from "ethers";
import type { TestApi } from "../helpers/api.js";
import { usingPostgres } from "../helpers/database.js";
import { expectErrorEnvelope } from "../helpers/envelope.js";
import { advanceSandbox, type MoneyStack, newTestUser, postWithKey, startMoneyStack } from "../helpers/money-stack.js";

// The guardians replace a lost or stolen owner key (D-106), over real HTTP on a real chain with
// the indexer: a taken-over account's vault handed to the user's new account, the stolen key's
// objection that cannot stop it alone, and a cancellation with a guardian's consent.

describe(`social vault API: recovery of an owner's key (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(240_000);
  let api: TestApi;
  const users: { subject: string; token: string }[] = [];

  async function newUser(funds = 0) {
    const user = await newTestUser(api, "recover", funds);
    users.push(user);
    return user;
  }
  const post = (path: string, token: string, body: unknown = {}) => postWithKey(api, path, token, body);
  const get = (path: string, token: string) => api.request("GET", path, { token });
  /** Moves the clocks on a little past `seconds` (the dev chain's time runs a few seconds ahead). */
  const advance = (seconds: number) => advanceSandbox(api, seconds + 100, users);

  let stack: MoneyStack | undefined;
  before(async () => {
    stack = await startMoneyStack();
    ({ api } = stack);
  });
  after(async () => {
    await stack?.close();
  });

  it("hands a taken-over account's vault to the user's new account; the old key alone cannot stop it", async () => {
    const owner = await newUser(100);
    const [g1, g2, g3] = [await newUser(), await newUser(), await newUser()];
    const guardians = [g1, g2, g3];
    const created = await post("/v1/social-vault", owner.token, {
      dailyLimit: 50,
      timelockDuration: 3_600,
      requiredSignatures: 2,
      duressPin: "2468",
    });
    expect(created.status, created.text).to.equal(200);
    const vaultAddress = created.body.data.vaultAddress as string;
    expect((await post("/v1/social-vault/deposit", owner.token, { amount: 80 })).status).to.equal(200);
    for (const guardian of guardians) {
      expect((await post("/v1/social-vault/guardians", owner.token, { walletAddress: guardian.wallet })).status).to.equal(200);
    }
    await advance(3_600);
    const renewed = await newUser();
    const approve = (guardian: { token: string }, newOwnerAddress: string) =>
      post("/v1/social-vault/recovery/approve", guardian.token, { vaultAddress, newOwnerAddress });

    // Addresses the vault would be lost to, or that cannot own it, are refused before anything is sent.
    for (const [newOwnerAddress, field] of [
      [vaultAddress, "newOwnerAddress"],
      [owner.wallet, "newOwnerAddress"],
      [g3.wallet, "newOwnerAddress"],
      ["0x0000000000000000000000000000000000000000", "newOwnerAddress"],
      ["0x12", "newOwnerAddress"],
    ] as const) {
      const refused = await approve(g1, newOwnerAddress);
      expectErrorEnvelope(refused, 400, "VALIDATION_ERROR");
      expect(refused.body.error.details.field, newOwnerAddress).to.equal(field);
    }
    expectErrorEnvelope(await approve(renewed, renewed.wallet), 403, "NOT_GUARDIAN");

    const first = await approve(g1, renewed.wallet);
    expect(first.status, first.text).to.equal(200);
    expect(first.body.data).to.deep.include({
      vaultAddress,
      newOwnerAddress: getAddress(renewed.wallet),
      approvalsReceived: 1,
      approvalsRequired: 2,
      status: "collecting",
      executableAt: null,
    });
    expectErrorEnvelope(await approve(g1, renewed.wallet), 409, "CONFLICT");
    expect((await get("/v1/social-vault/config", owner.token)).body.data).to.deep.include({ isLocked: false, recovery: null });

    const second = await approve(g2, renewed.wallet);
    expect(second.body.data).to.deep.include({ approvalsReceived: 2, status: "started" });
    const recovery = { newOwnerAddress: getAddress(renewed.wallet), executableAt: second.body.data.executableAt };
    // The owner sees it (the vault is locked: the stolen key moves nothing), and so do the guardians.
    expect((await get("/v1/social-vault/config", owner.token)).body.data).to.deep.include({ isLocked: true, recovery });
    expect((await get("/v1/social-vault/guarding", g3.token)).body.data[0]).to.deep.include({ isLocked: true, recovery });
    expectErrorEnvelope(
      await post("/v1/social-vault/withdraw/instant", owner.token, { amount: 10, recipient: owner.wallet }),
      400,
      "VAULT_LOCKED",
    );

    // The old key objects: alone, that stops nothing; nor does asking for an unlock.
    const objected = await post("/v1/social-vault/recovery/cancel", owner.token);
    expect(objected.body.data).to.deep.include({ vaultAddress, status: "objected" });
    expectErrorEnvelope(await post("/v1/social-vault/recovery/cancel", owner.token), 409, "CONFLICT");
    expectErrorEnvelope(await post("/v1/social-vault/recovery/finalize", g3.token, { vaultAddress }), 409, "TIMELOCK_ACTIVE");

    await advance(3_600);
    expect((await post("/v1/social-vault/unlock", owner.token)).body.data.status).to.equal("unlock_requested");
    const ownerUnlock = await post("/v1/social-vault/unlock", owner.token);
    expectErrorEnvelope(ownerUnlock, 409, "CONFLICT");
    expect(ownerUnlock.body.error.details.reason).to.equal("recovery pending");

    const finalized = await post("/v1/social-vault/recovery/finalize", g3.token, { vaultAddress });
    expect(finalized.status, finalized.text).to.equal(200);
    expect(finalized.body.data).to.deep.include({ vaultAddress, ownerAddress: getAddress(renewed.wallet), isLocked: false });

    // The vault is the new account's, with its money and guardians; the old account has none and cannot make one again.
    expect((await get("/v1/social-vault/config", owner.token)).body.data.isConfigured).to.equal(false);
    expect((await get("/v1/social-vault/config", renewed.token)).body.data).to.deep.include({
      isConfigured: true,
      guardianCount: 3,
      isLocked: false,
      recovery: null,
    });
    const sent = await post("/v1/social-vault/withdraw/instant", renewed.token, { amount: 10, recipient: renewed.wallet });
    expect(sent.status, sent.text).to.equal(200);
    expect(sent.body.data.newBalance).to.equal("70.00");
    const again = await post("/v1/social-vault", owner.token, {
      dailyLimit: 50,
      timelockDuration: 3_600,
      requiredSignatures: 1,
      duressPin: "1357",
    });
    expectErrorEnvelope(again, 409, "SOCIAL_VAULT_EXISTS");

    // A recovery the owner (the new key now) objects to, with one guardian's consent, is cancelled; the lock stays.
    const other = await newUser();
    await approve(g1, other.wallet);
    expect((await approve(g3, other.wallet)).body.data.status).to.equal("started");
    expect((await post("/v1/social-vault/recovery/cancel", g2.token, { vaultAddress })).body.data.status).to.equal("objected");
    expect((await post("/v1/social-vault/recovery/cancel", renewed.token)).body.data.status).to.equal("cancelled");
    expect((await get("/v1/social-vault/config", renewed.token)).body.data).to.deep.include({ isLocked: true, recovery: null });
    expectErrorEnvelope(await post("/v1/social-vault/recovery/finalize", g3.token, { vaultAddress }), 409, "CONFLICT");
    expectErrorEnvelope(
      await post("/v1/social-vault/recovery/cancel", g2.token, { vaultAddress: `0x${randomUUID().replaceAll("-", "").padEnd(40, "0")}` }),
      404,
      "SOCIAL_VAULT_NOT_FOUND",
    );
  });
});
