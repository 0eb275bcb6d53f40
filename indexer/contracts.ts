import type { EventFragment, Interface } from "ethers";
import type { Deployment } from "../core/deployments.js";
import { type PlatformContractKey, platformInterface } from "../core/platform-abi.js";
import { compileStaticDecoder, type EventArgs, namedArgs, type StaticDecoder } from "./decoder.js";
import type { LogFilter, RpcLog } from "./rpc.js";

/** The platform contracts whose logs the indexer reads (their ABIs: core/platform-abi.ts). */
const SOURCES = [
  "usdc",
  "stakingVault",
  "loanBook",
  "socialVaultFactory",
  "socialVault",
  "paymentRouter",
] as const satisfies readonly PlatformContractKey[];
/** Which platform contract emitted a log. */
export type Source = (typeof SOURCES)[number];

export interface Decoded {
  name: string;
  args: EventArgs;
}

let interfaces: Record<Source, Interface> | undefined;

/** The ABIs of the platform's contracts, read once per process (the catalogue and the handlers' checks share them). */
export function contractInterfaces(): Readonly<Record<Source, Interface>> {
  interfaces ??= Object.fromEntries(SOURCES.map((source) => [source, platformInterface(source)])) as Record<Source, Interface>;
  return interfaces;
}

/**
 * The compiled ABIs (Hardhat artifacts) of the platform's contracts, with the event
 * fragments looked up once by topic0 so that decoding a log is one map lookup and one decoder call.
 */
export class ContractCatalogue {
  readonly interfaces: Readonly<Record<Source, Interface>>;
  private readonly fragments: Record<Source, Map<string, EventFragment>>;
  private readonly fast = new Map<EventFragment, StaticDecoder | null>();

  constructor() {
    this.interfaces = contractInterfaces();
    this.fragments = Object.fromEntries(
      Object.entries(this.interfaces).map(([source, iface]) => {
        const byTopic = new Map<string, EventFragment>();
        iface.forEachEvent((fragment) => {
          byTopic.set(fragment.topicHash, fragment);
        });
        return [source, byTopic];
      }),
    ) as Record<Source, Map<string, EventFragment>>;
  }

  topicOf(source: Source, eventName: string): string {
    const fragment = this.interfaces[source].getEvent(eventName);
    if (!fragment) throw new Error(`no event ${eventName} in the ${source} ABI`);
    return fragment.topicHash;
  }

  /**
   * The topics of one contract's own events (named after it). Inherited generic events such as
   * `Initialized` are left out: every upgradeable contract on a public chain emits them.
   */
  ownTopicsOf(source: Source, prefix: string): string[] {
    return [...this.fragments[source].entries()].filter(([, fragment]) => fragment.name.startsWith(prefix)).map(([topic]) => topic);
  }

  /**
   * Decodes a log of `source`. Returns null when the ABI has no such event (an unknown log);
   * throws when it has one but the data does not fit it (a malformed log).
   */
  decode(source: Source, log: Pick<RpcLog, "topics" | "data">): Decoded | null {
    const topic0 = log.topics[0];
    const fragment = topic0 === undefined ? undefined : this.fragments[source].get(topic0);
    if (!fragment) return null;
    let fast = this.fast.get(fragment);
    if (fast === undefined) {
      fast = compileStaticDecoder(fragment);
      this.fast.set(fragment, fast);
    }
    if (fast) return { name: fragment.name, args: fast(log.topics, log.data) };
    return {
      name: fragment.name,
      args: namedArgs(fragment.inputs, this.interfaces[source].decodeEventLog(fragment, log.data, log.topics)),
    };
  }
}

/** Lower-case addresses of the deployment's contracts. */
export interface PlatformAddresses {
  usdc: string;
  stakingVault: string;
  loanBook: string;
  socialVaultFactory: string;
  paymentRouter: string;
}

export function platformAddresses(deployment: Deployment): PlatformAddresses {
  const address = (key: string) => {
    const contract = deployment.contracts[key];
    if (!contract) throw new Error(`deployment of chain ${deployment.chainId} has no ${key}`);
    return contract.address.toLowerCase();
  };
  return {
    usdc: address("usdc"),
    stakingVault: address("stakingVault"),
    loanBook: address("loanBook"),
    socialVaultFactory: address("socialVaultFactory"),
    paymentRouter: address("paymentRouter"),
  };
}

/** The first block with platform events: the earliest platform contract deployment (USDC may be older). */
export function startBlock(deployment: Deployment): number {
  return Math.min(...["stakingVault", "loanBook", "socialVaultFactory"].map((key) => deployment.contracts[key]?.blockNumber ?? 0));
}

/**
 * The eth_getLogs filters of one block range: every event of the vault, loan book and factory;
 * USDC Transfer events only (approvals are noise); and the social vaults' events by topic, since
 * their clones appear over time (a log is kept only if its address was created by the factory).
 */
export function logFilters(catalogue: ContractCatalogue, addresses: PlatformAddresses): LogFilter[] {
  return [
    { address: [addresses.stakingVault, addresses.loanBook, addresses.socialVaultFactory, addresses.paymentRouter] },
    { address: addresses.usdc, topics: [catalogue.topicOf("usdc", "Transfer")] },
    { topics: [catalogue.ownTopicsOf("socialVault", "SocialVault")] },
  ];
}
