// The wallets' USDC allowances of the platform's contracts, given by EIP-2612 permits the paying
// account submits (USDC takes permits from anyone): a managed wallet's standing allowance (D-86),
// and the permit a user's own wallet signed for one write (D-119).
import { type Contract, type HDNodeWallet, isError, type JsonRpcProvider, MaxUint256, type Signature, ZeroAddress, ZeroHash } from "ethers";
import { PERMIT_TYPES, signTyped } from "../../core/eip712.js";
import { REQUEST_LIFETIME_S } from "./batcher.js";
import { TransactionRevertedError } from "./failures.js";
import type { TransactionSender } from "./sender.js";
import type { Eip712Domain } from "./wallet-signatures.js";

export function createAllowances(deps: {
  provider: JsonRpcProvider;
  chainId: number;
  usdc: Contract;
  sender: Pick<TransactionSender, "earlier" | "releaseKey" | "send">;
}) {
  const { provider, chainId, usdc, sender } = deps;
  let permitDomain: Promise<{ name: string; version: string }> | undefined;

  /** The token's EIP-712 name and version as it reports them (ERC-5267, else name() and version()). */
  function tokenDomain() {
    permitDomain ??= (async () => {
      try {
        const [, name, version] = (await usdc.eip712Domain()) as [string, string, string];
        return { name, version };
      } catch {
        return { name: (await usdc.name()) as string, version: (await usdc.version()) as string };
      }
    })().catch((error) => {
      permitDomain = undefined;
      throw error;
    });
    return permitDomain;
  }

  let authorizations: Promise<boolean> | undefined;
  /**
   * Whether the token takes EIP-3009 authorizations (USDC and the test USDC do, D-120): a token
   * configured by USDC_ADDRESS that does not is paid with a permit and a forwarded request instead.
   */
  function takesAuthorizations() {
    authorizations ??= (usdc.authorizationState(ZeroAddress, ZeroHash) as Promise<boolean>).then(
      () => true,
      (error) => {
        if (isError(error, "CALL_EXCEPTION") || isError(error, "BAD_DATA")) return false;
        authorizations = undefined; // the node failed, not the token: asked again next time
        throw error;
      },
    );
    return authorizations;
  }

  /** The wallet's USDC allowance of `spender` and its balance, counting what is pending. */
  const allowanceAndBalance = (owner: string, spender: string) =>
    Promise.all([
      usdc.allowance(owner, spender, { blockTag: "pending" }) as Promise<bigint>,
      usdc.balanceOf(owner, { blockTag: "pending" }) as Promise<bigint>,
    ]);

  /** A wallet short of `value` (an empty one pays nothing): the token's own answer, before anything is granted or signed. */
  const emptyWallet = (owner: string, value: bigint, balance = 0n) =>
    new TransactionRevertedError(
      { name: "ERC20InsufficientBalance", args: [owner, balance, value] },
      "reverted with ERC20InsufficientBalance",
    );

  /**
   * Submits the wallet's signed EIP-2612 permit with the paying account (USDC takes permits from
   * anyone). One grant per permit nonce: a retry after a crash, or another process, settles the
   * one recorded, unless it did nothing (its deadline passed while a reorganisation held it back,
   * D-92): then anew.
   */
  async function grant(
    owner: string,
    userId: string,
    permit: { spender: string; value: bigint; nonce: bigint; deadline: bigint },
    signature: Signature,
  ) {
    const { spender, value, nonce, deadline } = permit;
    const grantKey = { userId, idempotencyKey: `allowance ${spender.toLowerCase()} ${nonce}`, purpose: "relay.allowance" };
    const recorded = await sender.earlier(grantKey);
    if (recorded && (recorded.status === "reverted" || recorded.status === "failed")) await sender.releaseKey(recorded);
    const { v, r, s } = signature;
    await sender.send({
      ...grantKey,
      to: usdc.target as string,
      data: usdc.interface.encodeFunctionData("permit", [owner, spender, value, deadline, v, r, s]),
    });
  }

  /** The token's EIP-712 domain for permits. */
  const permitDomain712 = async (): Promise<Eip712Domain> => ({
    ...(await tokenDomain()),
    chainId,
    verifyingContract: usdc.target as string,
  });

  /**
   * A standing allowance of `spender` over the managed wallet's USDC, granted once by a permit
   * the wallet signs, so that the user's calls pull with no permit of their own (D-86). Requests
   * of this process for the same wallet and spender share one grant; a grant another process
   * made first serves as well.
   */
  const granting = new Map<string, Promise<void>>();
  async function ensureAllowance(wallet: HDNodeWallet, userId: string, { spender, value }: { spender: string; value: bigint }) {
    const [allowed, balance] = await allowanceAndBalance(wallet.address, spender);
    if (allowed >= value) return;
    // (A call may pull less than `value`, a repayment capped at what is owed, so only 0 is sure.)
    if (balance === 0n) throw emptyWallet(wallet.address, value);
    const key = `${wallet.address}:${spender}`.toLowerCase();
    let granted = granting.get(key);
    if (!granted) {
      granted = (async () => {
        const [nonce, latest, domain] = await Promise.all([
          usdc.nonces(wallet.address, { blockTag: "pending" }) as Promise<bigint>,
          provider.getBlock("latest"),
          permitDomain712(),
        ]);
        const deadline = BigInt(latest!.timestamp) + REQUEST_LIFETIME_S;
        const permit = { owner: wallet.address, spender, value: MaxUint256, nonce, deadline };
        await grant(wallet.address, userId, permit, signTyped(wallet, domain, PERMIT_TYPES, permit));
      })().finally(() => granting.delete(key));
      granting.set(key, granted);
    }
    // Another process's grant may have taken the permit's nonce: what counts is the allowance.
    await granted.catch(async (error) => {
      if ((await allowanceAndBalance(wallet.address, spender))[0] < value) throw error;
    });
  }

  return { allowanceAndBalance, emptyWallet, grant, permitDomain: permitDomain712, ensureAllowance, takesAuthorizations };
}

export type Allowances = ReturnType<typeof createAllowances>;
