// The rewards' manifest (domain/module.ts): the consumers that turn chain facts into XP and Trust Score inputs.
import { defineModule } from "../module.js";

export const rewardsModule = defineModule({ name: "rewards", consumers: ["rewards", "trust-score"] });
