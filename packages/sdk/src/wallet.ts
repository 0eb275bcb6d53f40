// A wallet the user holds: an EIP-1193 provider (a browser wallet, WalletConnect's), a viem
// wallet client (wagmi's) or an ethers signer, for Sign-In with Ethereum and for the writes it
// signs (EIP-712). The SDK depends on none of them: each is recognised by the methods it has.

/** An EIP-1193 provider: `window.ethereum`, an EIP-6963 wallet's, WalletConnect's. */
export interface Eip1193Provider {
  request(args: { method: string; params?: readonly unknown[] }): Promise<unknown>;
}

/** A viem wallet client (wagmi's `useWalletClient`), with its account or the wallet's first. */
export interface ViemWalletClient {
  account?: { address: string } | undefined;
  getAddresses(): Promise<readonly string[]>;
  signMessage(args: { account: never; message: string }): Promise<string>;
  signTypedData?(args: never): Promise<string>;
}

/** An ethers signer (v5 or v6): a `Wallet`, a `BrowserProvider`'s `getSigner()`. */
export interface EthersSigner {
  getAddress(): Promise<string>;
  signMessage(message: string): Promise<string>;
  /** ethers v6 */
  signTypedData?(domain: never, types: never, value: never): Promise<string>;
  /** ethers v5 */
  _signTypedData?(domain: never, types: never, value: never): Promise<string>;
}

export type WalletSigner = Eip1193Provider | ViemWalletClient | EthersSigner;

/** EIP-712 typed data as `eth_signTypedData_v4` takes it (a prepare call's `request` and `permit`). */
export interface TypedData {
  domain: Record<string, unknown>;
  types: Record<string, { name: string; type: string }[]>;
  primaryType: string;
  message: Record<string, unknown>;
}

/** An address and a way to sign a text (EIP-191) and typed data (EIP-712) with it. */
export interface SigningWallet {
  address: string;
  sign(message: string): Promise<string>;
  signTyped(typed: TypedData): Promise<string>;
}

/** The typed data without its EIP712Domain type (viem and ethers make it from the domain). */
const withoutDomainType = (typed: TypedData) => {
  const { EIP712Domain: _domain, ...types } = typed.types;
  return types;
};

/** viem checks integer fields as numbers: the message's integers (decimal strings here) as bigints. */
function withBigInts(typed: TypedData): Record<string, unknown> {
  const fields = typed.types[typed.primaryType] ?? [];
  return Object.fromEntries(
    Object.entries(typed.message).map(([name, value]) => {
      const type = fields.find((field) => field.name === name)?.type ?? "";
      return [name, /^u?int\d*$/.test(type) && typeof value === "string" ? BigInt(value) : value];
    }),
  );
}

const hexOf = (text: string) => `0x${Array.from(new TextEncoder().encode(text), (byte) => byte.toString(16).padStart(2, "0")).join("")}`;

/** The address of any of the three kinds of signer, and its ways to sign. */
export async function signingWallet(signer: WalletSigner): Promise<SigningWallet> {
  if ("getAddresses" in signer) {
    const address = signer.account?.address ?? (await signer.getAddresses())[0];
    if (!address) throw new Error("The wallet client has no account");
    const account = (signer.account ?? address) as never;
    return {
      address,
      sign: (message) => signer.signMessage({ account, message }),
      signTyped: (typed) => {
        if (!signer.signTypedData) throw new TypeError("The wallet client cannot sign typed data");
        const { domain, primaryType } = typed;
        return signer.signTypedData({
          account,
          domain,
          types: withoutDomainType(typed),
          primaryType,
          message: withBigInts(typed),
        } as never);
      },
    };
  }
  if ("getAddress" in signer) {
    return {
      address: await signer.getAddress(),
      sign: (message) => signer.signMessage(message),
      signTyped: (typed) => {
        const sign = signer.signTypedData?.bind(signer) ?? signer._signTypedData?.bind(signer);
        if (!sign) throw new TypeError("The signer cannot sign typed data");
        return sign(typed.domain as never, withoutDomainType(typed) as never, typed.message as never);
      },
    };
  }
  const [address] = (await signer.request({ method: "eth_requestAccounts" })) as string[];
  if (!address) throw new Error("The wallet shared no account");
  return {
    address,
    sign: (message) => signer.request({ method: "personal_sign", params: [hexOf(message), address] }) as Promise<string>,
    signTyped: (typed) => signer.request({ method: "eth_signTypedData_v4", params: [address, JSON.stringify(typed)] }) as Promise<string>,
  };
}

/** The answer of a write's prepare call (POST <path>/prepare), as the API sends it. */
interface Prepared {
  data?: { request: TypedData; permit: TypedData | null };
}

/**
 * A fetch that lets the user's own wallet sign their writes (an account signed in with Ethereum,
 * custody "self"): a write the API answers 403 SIGNATURE_REQUIRED is prepared (the same path
 * with /prepare and the same body), its typed data signed by the wallet (one prompt, two where
 * the write's USDC needs a permit), and sent again with the signatures in Wallet-Signature and
 * Wallet-Permit-Signature, under the same Idempotency-Key. A managed wallet's account is never
 * asked to sign: its writes go through as they are.
 */
export function withWallet(send: (request: Request) => Promise<Response>, signer: WalletSigner) {
  let wallet: Promise<SigningWallet> | undefined;
  return async (request: Request): Promise<Response> => {
    if (request.method === "GET" || request.method === "HEAD") return send(request);
    const body = await request.clone().arrayBuffer();
    const headers = new Headers(request.headers);
    // One key for the refused attempt and the signed one: a retry of the call is still the same write.
    if (!headers.has("idempotency-key")) headers.set("idempotency-key", globalThis.crypto.randomUUID());
    const again = (init: { url?: string; method?: string; headers?: Headers }) =>
      send(
        new Request(init.url ?? request.url, {
          method: init.method ?? request.method,
          headers: init.headers ?? headers,
          body,
          signal: request.signal,
        }),
      );
    const first = await again({});
    if (first.status !== 403) return first;
    const refusal = (await first
      .clone()
      .json()
      .catch(() => null)) as { error?: { code?: string } } | null;
    if (refusal?.error?.code !== "SIGNATURE_REQUIRED") return first;
    await first.body?.cancel();
    const url = new URL(request.url);
    url.pathname = `${url.pathname}/prepare`;
    const prepareHeaders = new Headers(headers);
    prepareHeaders.delete("idempotency-key");
    const prepared = await again({ url: url.toString(), method: "POST", headers: prepareHeaders });
    if (!prepared.ok) return prepared;
    const { data } = (await prepared.json()) as Prepared;
    if (!data) throw new Error("The prepare call answered nothing to sign");
    wallet ??= signingWallet(signer).catch((error) => {
      wallet = undefined;
      throw error;
    });
    const signing = await wallet;
    const signed = new Headers(headers);
    signed.set("wallet-signature", await signing.signTyped(data.request));
    if (data.permit) signed.set("wallet-permit-signature", await signing.signTyped(data.permit));
    return again({ headers: signed });
  };
}
