import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { HDNodeWallet, Mnemonic, randomBytes } from "ethers";
import type { Database } from "./db.js";
import { sharedSecret } from "./shared-secrets.js";

/**
 * Managed wallets: one HD seed (BIP-39 mnemonic), one derivation index per user
 * (m/44'/60'/0'/0/{index}, stored in the database). Addresses are derived when a user is
 * provisioned; private keys exist only in memory (the signers of the last 1,000 users who
 * signed are kept there), never stored or logged.
 */
export interface ManagedWallets {
  addressOf(index: number): string;
  /** The signing wallet of a user (connect it to a provider to send transactions). */
  signerOf(index: number): HDNodeWallet;
}

export const MANAGED_WALLET_PATH = "m/44'/60'/0'/0";
const DEV_MNEMONIC_FILE = "managed-wallets.mnemonic";
/** Derived signers kept in memory (the most recently used users' keys). */
const SIGNER_CACHE_MAX = 1_000;

export function createManagedWallets(mnemonic: string): ManagedWallets {
  const root = HDNodeWallet.fromPhrase(mnemonic, undefined, MANAGED_WALLET_PATH);
  const cache = new Map<number, string>();
  // Least recently used first (a Map keeps insertion order; a hit is moved to the end).
  const signers = new Map<number, HDNodeWallet>();
  return {
    addressOf(index) {
      let address = cache.get(index);
      if (!address) {
        address = root.deriveChild(index).address;
        cache.set(index, address);
      }
      return address;
    },
    signerOf(index) {
      // Derivation (HMAC-SHA512 and a point multiplication) costs more than the signature itself.
      let signer = signers.get(index);
      if (signer) {
        signers.delete(index);
      } else {
        signer = root.deriveChild(index);
        if (signers.size >= SIGNER_CACHE_MAX) signers.delete(signers.keys().next().value!);
      }
      signers.set(index, signer);
      return signer;
    },
  };
}

/** The row of `ServiceSecret` that holds the development seed. */
const SEED_SECRET = "managed-wallet-mnemonic";

/**
 * The seed of the deployment's managed wallets: MANAGED_WALLET_MNEMONIC (required in
 * production), or outside production one seed shared by every process on the database:
 * generated once (or taken from an older `$DATA_DIR/managed-wallets.mnemonic`, so existing
 * development wallets keep their addresses) and stored in `ServiceSecret`, the first writer
 * winning a race. Two API processes with different DATA_DIRs therefore derive the same wallets.
 */
export async function resolveManagedWalletMnemonic(options: {
  mnemonic: string | undefined;
  dataDir: string;
  isProduction: boolean;
  db: Pick<Database, "prisma">;
}): Promise<string> {
  if (options.mnemonic) return options.mnemonic;
  if (options.isProduction) throw new Error("MANAGED_WALLET_MNEMONIC is required in production");
  // An older `$DATA_DIR/managed-wallets.mnemonic` keeps existing development wallets' addresses.
  const legacy = path.resolve(options.dataDir, DEV_MNEMONIC_FILE);
  return sharedSecret(options.db, SEED_SECRET, () =>
    existsSync(legacy) ? readFileSync(legacy, "utf8").trim() : Mnemonic.fromEntropy(randomBytes(16)).phrase,
  );
}

/** The process's managed wallets: the deployment's one seed (see resolveManagedWalletMnemonic). */
export async function managedWalletsFor(
  config: { managedWalletMnemonic: string | undefined; dataDir: string; isProduction: boolean },
  db: Pick<Database, "prisma">,
): Promise<ManagedWallets> {
  return createManagedWallets(
    await resolveManagedWalletMnemonic({
      mnemonic: config.managedWalletMnemonic,
      dataDir: config.dataDir,
      isProduction: config.isProduction,
      db,
    }),
  );
}
