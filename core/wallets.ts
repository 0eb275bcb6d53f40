import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { HDNodeWallet, Mnemonic, randomBytes } from "ethers";

/**
 * Managed wallets: one HD seed (BIP-39 mnemonic), one derivation index per user
 * (m/44'/60'/0'/0/{index}, stored in the database). Addresses are derived when a user is
 * provisioned; private keys exist only in memory when a signer is needed, never stored
 * or logged.
 */
export interface ManagedWallets {
  addressOf(index: number): string;
  /** The signing wallet of a user (connect it to a provider to send transactions). */
  signerOf(index: number): HDNodeWallet;
}

export const MANAGED_WALLET_PATH = "m/44'/60'/0'/0";
const DEV_MNEMONIC_FILE = "managed-wallets.mnemonic";

export function createManagedWallets(mnemonic: string): ManagedWallets {
  const root = HDNodeWallet.fromPhrase(mnemonic, undefined, MANAGED_WALLET_PATH);
  const cache = new Map<number, string>();
  return {
    addressOf(index) {
      let address = cache.get(index);
      if (!address) {
        address = root.deriveChild(index).address;
        cache.set(index, address);
      }
      return address;
    },
    signerOf: (index) => root.deriveChild(index),
  };
}

/**
 * The seed: MANAGED_WALLET_MNEMONIC (required in production), or outside production one
 * generated at the first start and kept in `$DATA_DIR/managed-wallets.mnemonic` (mode 0600),
 * so wallets survive restarts.
 */
export function loadManagedWalletMnemonic(options: { mnemonic: string | undefined; dataDir: string; isProduction: boolean }): string {
  if (options.mnemonic) return options.mnemonic;
  if (options.isProduction) throw new Error("MANAGED_WALLET_MNEMONIC is required in production");
  const file = path.resolve(options.dataDir, DEV_MNEMONIC_FILE);
  if (existsSync(file)) return readFileSync(file, "utf8").trim();
  mkdirSync(path.dirname(file), { recursive: true });
  const phrase = Mnemonic.fromEntropy(randomBytes(16)).phrase;
  writeFileSync(file, `${phrase}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return phrase;
}

/** Managed wallets whose seed is loaded at first use: processes that never provision or sign (the worker) never read it. */
export function lazyManagedWallets(loadMnemonic: () => string): ManagedWallets {
  let wallets: ManagedWallets | undefined;
  const get = () => {
    wallets ??= createManagedWallets(loadMnemonic());
    return wallets;
  };
  return { addressOf: (index) => get().addressOf(index), signerOf: (index) => get().signerOf(index) };
}

/** The process's managed wallets from its configuration (the seed is read at first use). */
export function walletsFromConfig(config: {
  managedWalletMnemonic: string | undefined;
  dataDir: string;
  isProduction: boolean;
}): ManagedWallets {
  return lazyManagedWallets(() =>
    loadManagedWalletMnemonic({ mnemonic: config.managedWalletMnemonic, dataDir: config.dataDir, isProduction: config.isProduction }),
  );
}
