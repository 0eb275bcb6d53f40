// A wallet the user holds, for tests: a key on the test's side that answers what a browser wallet
// answers over EIP-1193 (its account, personal_sign, eth_signTypedData_v4), as a provider for the
// SDK, or injected into a page as a wallet extension injects one (EIP-6963, window.ethereum).
import { getBytes, type TypedDataField, type Wallet } from "ethers";
import type { Page } from "playwright-core";

type Key = Pick<Wallet, "address" | "signMessage" | "signTypedData">;

/** EIP-712 typed data as eth_signTypedData_v4 takes it (its types with EIP712Domain). */
export interface TypedDataV4 {
  domain: Record<string, unknown>;
  types: Record<string, TypedDataField[]>;
  message: Record<string, unknown>;
}

/** The signature a wallet answers to eth_signTypedData_v4 for `typed`. */
export function signTypedDataV4(key: Pick<Wallet, "signTypedData">, typed: TypedDataV4) {
  const { EIP712Domain: _domain, ...types } = typed.types;
  return key.signTypedData(typed.domain, types, typed.message);
}

/** What the wallet of `key` answers to an EIP-1193 request; each method asked is pushed to `asked`. */
export function walletAnswers(key: Key, asked: string[] = []) {
  return async (method: string, params: readonly unknown[] = []): Promise<unknown> => {
    asked.push(method);
    if (method === "eth_requestAccounts" || method === "eth_accounts") return [key.address.toLowerCase()];
    if (method === "personal_sign") return key.signMessage(getBytes(params[0] as string));
    if (method === "eth_signTypedData_v4") {
      if ((params[0] as string).toLowerCase() !== key.address.toLowerCase()) throw new Error(`the test wallet does not hold ${params[0]}`);
      return signTypedDataV4(key, JSON.parse(params[1] as string) as TypedDataV4);
    }
    throw new Error(`the test wallet does not answer ${method}`);
  };
}

/** An EIP-1193 provider of `key`, and the methods it was asked. */
export function eip1193Wallet(key: Key) {
  const asked: string[] = [];
  const answer = walletAnswers(key, asked);
  return { provider: { request: ({ method, params }: { method: string; params?: readonly unknown[] }) => answer(method, params) }, asked };
}

/**
 * The wallet of `key` in `page`, as an extension injects one before the page's own scripts: an
 * EIP-1193 provider announced by EIP-6963, and as window.ethereum when `legacy`. Answers the
 * methods it was asked.
 */
export async function injectWallet(page: Page, key: Key, options: { legacy?: boolean } = {}): Promise<string[]> {
  const asked: string[] = [];
  await page.exposeFunction("testWalletRequest", walletAnswers(key, asked));
  await page.addInitScript(`(() => {
    const provider = { request: ({ method, params }) => window.testWalletRequest(method, params) };
    const detail = Object.freeze({
      info: { uuid: "8d3f5f0e-0000-4000-8000-000000000001", name: "Test Wallet", icon: "data:image/svg+xml,<svg/>", rdns: "test.wallet" },
      provider,
    });
    const announce = () => window.dispatchEvent(new CustomEvent("eip6963:announceProvider", { detail }));
    window.addEventListener("eip6963:requestProvider", announce);
    announce();
    ${options.legacy ? "window.ethereum = provider;" : ""}
  })();`);
  return asked;
}
