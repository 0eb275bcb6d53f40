import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./paths.js";

const ARTIFACTS_DIR = path.join(ROOT, "artifacts", "contracts");

/** What a contract's Hardhat artifact gives the service: its ABI and creation bytecode. */
export interface Artifact {
  abi: unknown[];
  bytecode: string;
}

export function loadArtifact(sourcePath: string, contractName: string): Artifact {
  const file = path.join(ARTIFACTS_DIR, sourcePath, `${contractName}.json`);
  if (!existsSync(file)) throw new Error(`deploy: artifact ${sourcePath}:${contractName} not found; run \`npm run build\``);
  return JSON.parse(readFileSync(file, "utf8")) as Artifact;
}
