// `prisma generate` without the native schema engine: Prisma 7's `prisma-client`
// generator is pure TypeScript, but the CLI insists that a schema-engine binary
// path exists (it is not executed for `generate`), so point it at any file.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

if (!existsSync("prisma/schema.prisma")) process.exit(0);
const result = spawnSync("npx", ["--no-install", "prisma", "generate"], {
  stdio: "inherit",
  env: {
    ...process.env,
    PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY || process.execPath,
    PRISMA_HIDE_UPDATE_MESSAGE: "1",
    CHECKPOINT_DISABLE: "1",
  },
});
process.exit(result.status ?? 1);
