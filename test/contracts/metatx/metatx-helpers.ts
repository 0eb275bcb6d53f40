// Signing helpers for the meta-transaction tests: ERC-2771 forward requests for the TrustMintForwarder and EIP-2612
// permits and EIP-3009 authorizations for MockUSDC, built the way the service's relayer builds them. Declares no tests itself.
import type { HardhatEthers } from "@nomicfoundation/hardhat-ethers/types";
import type { NetworkHelpers } from "@nomicfoundation/hardhat-network-helpers/types";
import { type BaseContract, concat, Signature, type TypedDataDomain, type TypedDataField, Wallet } from "ethers";
import { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, PERMIT_TYPES, RECEIVE_WITH_AUTHORIZATION_TYPES } from "../../../core/eip712.js";
import { deployLending, USDC } from "../lending/lending-fixture.js";

export { FORWARD_REQUEST_TYPES, FORWARDER_DOMAIN, PERMIT_TYPES };

/** What can sign typed data: a managed wallet (ethers Wallet) or a Hardhat account. */
export interface TypedSigner {
  getAddress(): Promise<string>;
  signTypedData(domain: TypedDataDomain, types: Record<string, TypedDataField[]>, value: Record<string, unknown>): Promise<string>;
}

/** `ERC2771Forwarder.ForwardRequestData`, as `execute` takes it. */
export interface ForwardRequestData {
  from: string;
  to: string;
  value: bigint;
  gas: bigint;
  deadline: bigint;
  data: string;
  signature: string;
}

/** A managed wallet: a deterministic key that has never held ETH; it only signs. */
export function managedWallet(ethers: HardhatEthers, label: string): Wallet {
  return new Wallet(ethers.id(`managed wallet ${label}`), ethers.provider);
}

/** The latest block's timestamp plus `seconds`. */
export async function inSeconds(ethers: HardhatEthers, seconds: number): Promise<bigint> {
  return BigInt((await ethers.provider.getBlock("latest"))!.timestamp + seconds);
}

/**
 * `signer` signs a request to call `target` with `data` through `forwarder`. Defaults: its next forwarder nonce,
 * a deadline one hour ahead, 1,000,000 gas for the call, no value, `from` = the signer.
 */
export async function signRequest(
  forwarder: BaseContract,
  signer: TypedSigner,
  target: BaseContract | string,
  data: string,
  options: { from?: string; nonce?: bigint; deadline?: bigint; gas?: bigint } = {},
): Promise<ForwardRequestData> {
  const ethers = forwarder.runner!.provider!;
  const from = options.from ?? (await signer.getAddress());
  const to = typeof target === "string" ? target : await target.getAddress();
  const nonce = options.nonce ?? ((await forwarder.getFunction("nonces")(from)) as bigint);
  const deadline = options.deadline ?? BigInt((await ethers.getBlock("latest"))!.timestamp + 3_600);
  const gas = options.gas ?? 1_000_000n;
  const domain = {
    ...FORWARDER_DOMAIN,
    chainId: (await ethers.getNetwork()).chainId,
    verifyingContract: await forwarder.getAddress(),
  };
  const message = { from, to, value: 0n, gas, nonce, deadline, data };
  const signature = await signer.signTypedData(domain, FORWARD_REQUEST_TYPES, message);
  return { from, to, value: 0n, gas, deadline, data, signature };
}

/**
 * `signer` signs an EIP-2612 permit of `token` for `spender`. The domain is read from the token (`name()`,
 * `version()`), as the relayer does for real USDC. Defaults: the owner's next permit nonce, one hour ahead, and the
 * signer as the owner (`owner` names another, for forgeries).
 */
export async function signPermit(
  token: BaseContract,
  signer: TypedSigner,
  spender: BaseContract | string,
  value: bigint,
  options: { nonce?: bigint; deadline?: bigint; owner?: string } = {},
): Promise<{ deadline: bigint; v: number; r: string; s: string }> {
  const provider = token.runner!.provider!;
  const ownerAddress = options.owner ?? (await signer.getAddress());
  const spenderAddress = typeof spender === "string" ? spender : await spender.getAddress();
  const nonce = options.nonce ?? ((await token.getFunction("nonces")(ownerAddress)) as bigint);
  const deadline = options.deadline ?? BigInt((await provider.getBlock("latest"))!.timestamp + 3_600);
  const domain = {
    name: (await token.getFunction("name")()) as string,
    version: (await token.getFunction("version")()) as string,
    chainId: (await provider.getNetwork()).chainId,
    verifyingContract: await token.getAddress(),
  };
  const message = { owner: ownerAddress, spender: spenderAddress, value, nonce, deadline };
  const { v, r, s } = Signature.from(await signer.signTypedData(domain, PERMIT_TYPES, message));
  return { deadline, v, r, s };
}

/**
 * A signer at the forwarder's address, to send a target exactly what the forwarder sends (`data ‖ from`) and read the
 * target's own error, which `execute` reports only as `FailedCall()`.
 */
export async function forwarderAccount(
  ethers: HardhatEthers,
  networkHelpers: Pick<NetworkHelpers, "impersonateAccount" | "setBalance">,
  forwarder: BaseContract,
) {
  const address = await forwarder.getAddress();
  await networkHelpers.impersonateAccount(address);
  await networkHelpers.setBalance(address, 10n ** 18n);
  const signer = await ethers.getSigner(address);
  return {
    /** Calls `target` with `data` as a request of `from` relayed by the forwarder. */
    call: async (target: BaseContract, data: string, from: string) =>
      signer.sendTransaction({ to: await target.getAddress(), data: concat([data, from]) }),
  };
}

/**
 * The platform as `core/deployments.ts` wires it (the lending contracts and the social-vault factory, all trusting
 * one forwarder), a relayer account that pays the gas, and two managed wallets without ETH (`user` holds 10,000 USDC
 * and has approved nothing).
 */
export async function deployPlatform(ethers: HardhatEthers) {
  const f = await deployLending(ethers);
  const factory = await ethers.deployContract("SocialVaultFactory", [await f.usdc.getAddress(), await f.forwarder.getAddress()]);
  const relayer = (await ethers.getSigners())[9]!;
  const user = managedWallet(ethers, "user");
  const other = managedWallet(ethers, "other");
  await f.usdc.mint(user.address, USDC(10_000));
  return { ...f, factory, relayer, user, other };
}

/** The token's EIP-712 domain, read from it (`name()`, `version()`) as the relayer does for real USDC. */
async function tokenDomain(token: BaseContract) {
  const provider = token.runner!.provider!;
  return {
    name: (await token.getFunction("name")()) as string,
    version: (await token.getFunction("version")()) as string,
    chainId: (await provider.getNetwork()).chainId,
    verifyingContract: await token.getAddress(),
  };
}

/**
 * `signer` signs an EIP-3009 `ReceiveWithAuthorization` of `token`: `value` from the signer to `to`, with `nonce`.
 * Defaults: valid from now (validAfter 0) for one hour; `from` names another holder, for forgeries.
 */
export async function signReceiveAuthorization(
  token: BaseContract,
  signer: TypedSigner,
  to: BaseContract | string,
  value: bigint,
  nonce: string,
  options: { validAfter?: bigint; validBefore?: bigint; from?: string } = {},
) {
  const provider = token.runner!.provider!;
  const from = options.from ?? (await signer.getAddress());
  const payee = typeof to === "string" ? to : await to.getAddress();
  const validAfter = options.validAfter ?? 0n;
  const validBefore = options.validBefore ?? BigInt((await provider.getBlock("latest"))!.timestamp + 3_600);
  const message = { from, to: payee, value, validAfter, validBefore, nonce };
  const signature = await signer.signTypedData(await tokenDomain(token), RECEIVE_WITH_AUTHORIZATION_TYPES, message);
  const { v, r, s } = Signature.from(signature);
  return { ...message, signature, v, r, s };
}
