// The job queue's manifest (domain/module.ts).
import { defineModule } from "../module.js";

export const jobsModule = defineModule({ name: "jobs", tables: { Job: "own", JobAttempt: "own" }, jobs: ["jobs.prune"] });
