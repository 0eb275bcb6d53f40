import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { Mnemonic } from "ethers";
import { createManagedWallets, resolveManagedWalletMnemonic } from "../../core/wallets.js";
import { startTestApi } from "../helpers/api.js";
import { createTestDatabase, type TestDatabase, usingPostgres } from "../helpers/database.js";

const tempDir = () => mkdtempSync(path.join(os.tmpdir(), "wallets-"));

describe(`managed wallets: one seed per deployment (${usingPostgres ? "PostgreSQL" : "PGlite"})`, function () {
  this.timeout(60_000);
  let db: TestDatabase;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await db?.destroy();
  });

  it("gives every process on one database the same seed, whatever its DATA_DIR, even when they start together", async () => {
    const phrases = await Promise.all(
      Array.from({ length: 8 }, () => resolveManagedWalletMnemonic({ mnemonic: undefined, dataDir: tempDir(), isProduction: false, db })),
    );
    expect(new Set(phrases).size).to.equal(1);
    expect(Mnemonic.isValidMnemonic(phrases[0]!)).to.equal(true);
    expect(await resolveManagedWalletMnemonic({ mnemonic: undefined, dataDir: tempDir(), isProduction: false, db })).to.equal(phrases[0]);
  });

  it("adopts an older DATA_DIR seed file, so existing development wallets keep their addresses", async () => {
    const dataDir = tempDir();
    const legacy = Mnemonic.fromEntropy(new Uint8Array(16).fill(7)).phrase;
    writeFileSync(path.join(dataDir, "managed-wallets.mnemonic"), `${legacy}\n`);
    expect(await resolveManagedWalletMnemonic({ mnemonic: undefined, dataDir, isProduction: false, db })).to.equal(legacy);
    expect(await resolveManagedWalletMnemonic({ mnemonic: undefined, dataDir: tempDir(), isProduction: false, db })).to.equal(legacy);
  });

  it("uses MANAGED_WALLET_MNEMONIC as given and stores nothing; production requires it", async () => {
    const phrase = Mnemonic.fromEntropy(new Uint8Array(16).fill(9)).phrase;
    expect(await resolveManagedWalletMnemonic({ mnemonic: phrase, dataDir: tempDir(), isProduction: true, db })).to.equal(phrase);
    expect(await db.prisma.serviceSecret.count()).to.equal(0);
    let refused: unknown;
    await resolveManagedWalletMnemonic({ mnemonic: undefined, dataDir: tempDir(), isProduction: true, db }).catch((error) => {
      refused = error;
    });
    expect(String(refused)).to.match(/MANAGED_WALLET_MNEMONIC is required in production/);
  });

  it("derives a user's address from the shared seed in whichever API process provisioned them", async () => {
    const first = await startTestApi({ db });
    const second = await startTestApi({ db, chain: first.chain });
    try {
      const viaFirst = await first.request("GET", "/v1/users/me", { token: await first.token("alice") });
      const viaSecond = await second.request("GET", "/v1/users/me", { token: await second.token("bob") });
      expect(first.dataDir).to.not.equal(second.dataDir);
      const seed = (await db.prisma.serviceSecret.findUniqueOrThrow({ where: { name: "managed-wallet-mnemonic" } })).value;
      const wallets = createManagedWallets(seed);
      for (const me of [viaFirst, viaSecond]) {
        const row = await db.prisma.user.findUniqueOrThrow({ where: { id: me.body.data.id } });
        expect(me.body.data.walletAddress).to.equal(wallets.addressOf(row.walletIndex));
      }
    } finally {
      await second.close();
      await first.close();
    }
  });
});
