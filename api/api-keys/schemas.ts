import { z } from "zod";
import { visibleName } from "../users/schemas.js";

export const createKeyBody = z.strictObject({
  name: visibleName(100).describe("a label to tell keys apart"),
});

export const apiKey = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string().describe("the first characters of the key"),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
  })
  .meta({ id: "ApiKey" });

export const createdKey = apiKey.extend({ key: z.string().describe("the key itself: shown only in this answer, store it now") });

export const keyIdParams = z.object({ keyId: z.string().min(1).max(64) });

export const revokedKey = z.object({ id: z.string(), revokedAt: z.string() });
