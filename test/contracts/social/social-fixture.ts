// Shared set-up for the social-vault mocha tests (no side effects on import; each test file passes its own
// network connection).
import { AbiCoder, keccak256, id as textHash } from "ethers";
import type { network } from "hardhat";

export type Connection = Awaited<ReturnType<typeof network.create>>;

export const HOUR = 3600;
export const DAY = 24 * HOUR;
export const USDC = (units: number | bigint) => BigInt(units) * 1_000_000n;

/** The 32-byte key the service would derive as HMAC(server secret, vault address || PIN). */
export const DURESS_KEY = textHash("hmac-sha256(server secret, vault || 123456)");
export const commitmentOf = (key: string) => keccak256(AbiCoder.defaultAbiCoder().encode(["bytes32"], [key]));

export const Status = { None: 0n, Pending: 1n, Approved: 2n, Executed: 3n, Cancelled: 4n, Expired: 5n } as const;
export const GuardianStatus = { None: 0n, Pending: 1n, Active: 2n } as const;
export const Param = { DailyLimit: 0, TimelockDuration: 1, RequiredSignatures: 2 } as const;

/** Pins the next block `seconds` after the latest one and returns its timestamp. */
export async function nextBlockAt({ networkHelpers }: Connection, seconds = 10): Promise<number> {
  const timestamp = (await networkHelpers.time.latest()) + seconds;
  await networkHelpers.time.setNextBlockTimestamp(timestamp);
  return timestamp;
}

/**
 * A vault owned by `owner` (daily limit 100 USDC, timelock 1 hour, 2 signatures, a duress commitment) holding
 * 10,000 USDC, with three active guardians.
 */
export async function socialVaultFixture(connection: Connection) {
  const { ethers, networkHelpers } = connection;
  const [deployer, owner, g1, g2, g3, recipient, stranger, other] = await ethers.getSigners();
  const usdc = await ethers.deployContract("MockUSDC", [deployer.address]);
  const forwarder = await ethers.deployContract("TrustMintForwarder");
  const factory = await ethers.deployContract("SocialVaultFactory", [await usdc.getAddress(), await forwarder.getAddress()]);
  await factory.connect(owner).createVault(USDC(100), HOUR, 2, commitmentOf(DURESS_KEY));
  const vault = await ethers.getContractAt("SocialVault", await factory.vaultOf(owner.address));
  for (const guardian of [g1, g2, g3]) await vault.connect(owner).addGuardian(guardian.address);
  await networkHelpers.time.increase(HOUR);
  await usdc.mint(owner.address, USDC(10_000));
  await usdc.connect(owner).approve(await vault.getAddress(), ethers.MaxUint256);
  await vault.connect(owner).deposit(USDC(10_000));
  return { usdc, forwarder, factory, vault, deployer, owner, g1, g2, g3, recipient, stranger, other };
}

export type SocialVaultFixture = Awaited<ReturnType<typeof socialVaultFixture>>;

/** Requests `amount` to `to` as the owner and returns the new id (read from the call's result). */
export async function request({ vault, owner }: SocialVaultFixture, amount: bigint, to: string): Promise<bigint> {
  const id = await vault.connect(owner).requestWithdrawal.staticCall(amount, to);
  await vault.connect(owner).requestWithdrawal(amount, to);
  return id;
}
