import path from "node:path";

/**
 * The repository's root. Run from the sources (tsx: `core/paths.ts`) or from the compiled copy
 * that `npm start` runs (`dist/core/paths.js`, built by scripts/build.mjs), the files beside the
 * code (prisma/, artifacts/, deployments/, assets) are found from here, not from each module's own
 * folder, which is one level deeper in dist/.
 */
export const ROOT = path.resolve(import.meta.dirname, import.meta.url.endsWith(".ts") ? ".." : "../..");
