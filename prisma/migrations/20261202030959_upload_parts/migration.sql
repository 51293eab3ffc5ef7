-- Widget uploads: their bytes move to UploadPart (written in pieces as the body arrives, read back the same
-- way), and each upload says when it was stored whole and when a message first named it, so that one never
-- named can go after RETAIN_UNATTACHED_UPLOADS. Uploads already kept count as stored, and as named when a
-- message of their conversation carries them.
CREATE TABLE "UploadPart" (
    "uploadId" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "bytes" BYTEA NOT NULL,

    CONSTRAINT "UploadPart_pkey" PRIMARY KEY ("uploadId","seq")
);

ALTER TABLE "UploadPart" ADD CONSTRAINT "UploadPart_uploadId_fkey" FOREIGN KEY ("uploadId") REFERENCES "Upload"("id") ON DELETE CASCADE ON UPDATE CASCADE;

INSERT INTO "UploadPart" ("uploadId", "seq", "bytes") SELECT id, 0, bytes FROM "Upload";

ALTER TABLE "Upload" DROP COLUMN "bytes",
ADD COLUMN     "attachedAt" TIMESTAMP(3),
ADD COLUMN     "storedAt" TIMESTAMP(3);

UPDATE "Upload" SET "storedAt" = "createdAt";

UPDATE "Upload" u SET "attachedAt" = u."createdAt"
WHERE EXISTS (
  SELECT 1 FROM "Message" m
  CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(m.attachments) = 'array' THEN m.attachments
                                               ELSE '[]'::jsonb END) a
  WHERE m."conversationId" = u."conversationId" AND m.role = 'user' AND a->'source'->>'uploadId' = u.id::text);

CREATE INDEX "Upload_attachedAt_createdAt_idx" ON "Upload"("attachedAt", "createdAt");
