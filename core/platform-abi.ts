import { Contract, type ContractRunner, type Fragment, Interface } from "ethers";
import { type Deployment, loadArtifact } from "./deployments.js";

/** The compiled contracts of the platform, by deployment key. */
export const PLATFORM_ARTIFACTS = {
  usdc: ["mocks/MockUSDC.sol", "MockUSDC"],
  stakingVault: ["vault/StakingVault.sol", "StakingVault"],
  interestRateModel: ["vault/InterestRateModel.sol", "InterestRateModel"],
  loanBook: ["lending/LoanBook.sol", "LoanBook"],
  socialVaultFactory: ["social/SocialVaultFactory.sol", "SocialVaultFactory"],
  socialVault: ["social/SocialVault.sol", "SocialVault"],
  forwarder: ["metatx/TrustMintForwarder.sol", "TrustMintForwarder"],
  paymentRouter: ["payments/PaymentRouter.sol", "PaymentRouter"],
} as const;
export type PlatformContractKey = keyof typeof PLATFORM_ARTIFACTS;

/** A platform contract's ABI. */
export function platformInterface(key: PlatformContractKey): Interface {
  const [file, name] = PLATFORM_ARTIFACTS[key];
  return new Interface(loadArtifact(file, name).abi as never);
}

let errors: Interface | undefined;

/** Every custom error of every platform contract (and OpenZeppelin's they use), to decode reverts. */
export function platformErrors(): Interface {
  if (!errors) {
    const seen = new Map<string, Fragment>();
    for (const key of Object.keys(PLATFORM_ARTIFACTS) as PlatformContractKey[]) {
      platformInterface(key).forEachError((fragment) => {
        seen.set(fragment.format("sighash"), fragment);
      });
    }
    errors = new Interface([...seen.values()]);
  }
  return errors;
}

/** A platform contract of the deployment, connected to `runner`. */
export function platformContract(deployment: Deployment, key: PlatformContractKey, runner?: ContractRunner): Contract {
  const address = deployment.contracts[key]?.address;
  if (!address) throw new Error(`deployment of chain ${deployment.chainId} has no ${key}`);
  return platformContractAt(key, address, runner);
}

/** A platform contract at an address the chain gives (a social vault clone, the vault's current rate model). */
export function platformContractAt(key: PlatformContractKey, address: string, runner?: ContractRunner): Contract {
  const [file, name] = PLATFORM_ARTIFACTS[key];
  return new Contract(address, loadArtifact(file, name).abi as never, runner);
}
