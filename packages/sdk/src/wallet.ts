// A wallet the user holds, for Sign-In with Ethereum: an EIP-1193 provider (a browser wallet,
// WalletConnect's), a viem wallet client (wagmi's) or an ethers signer. The SDK depends on none of
// them: each is recognised by the methods it has.

/** An EIP-1193 provider: `window.ethereum`, an EIP-6963 wallet's, WalletConnect's. */
export interface Eip1193Provider {
  request(args: { method: string; params?: readonly unknown[] }): Promise<unknown>;
}

/** A viem wallet client (wagmi's `useWalletClient`), with its account or the wallet's first. */
export interface ViemWalletClient {
  account?: { address: string } | undefined;
  getAddresses(): Promise<readonly string[]>;
  signMessage(args: { account: never; message: string }): Promise<string>;
}

/** An ethers signer (v5 or v6): a `Wallet`, a `BrowserProvider`'s `getSigner()`. */
export interface EthersSigner {
  getAddress(): Promise<string>;
  signMessage(message: string): Promise<string>;
}

export type WalletSigner = Eip1193Provider | ViemWalletClient | EthersSigner;

/** An address and a way to sign a text with it (EIP-191). */
export interface SigningWallet {
  address: string;
  sign(message: string): Promise<string>;
}

const hexOf = (text: string) => `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;

/** The address of any of the three kinds of signer, and its way to sign. */
export async function signingWallet(signer: WalletSigner): Promise<SigningWallet> {
  if ("getAddresses" in signer) {
    const address = signer.account?.address ?? (await signer.getAddresses())[0];
    if (!address) throw new Error("The wallet client has no account");
    const account = (signer.account ?? address) as never;
    return { address, sign: (message) => signer.signMessage({ account, message }) };
  }
  if ("getAddress" in signer) return { address: await signer.getAddress(), sign: (message) => signer.signMessage(message) };
  const [address] = (await signer.request({ method: "eth_requestAccounts" })) as string[];
  if (!address) throw new Error("The wallet shared no account");
  return {
    address,
    sign: (message) => signer.request({ method: "personal_sign", params: [hexOf(message), address] }) as Promise<string>,
  };
}
