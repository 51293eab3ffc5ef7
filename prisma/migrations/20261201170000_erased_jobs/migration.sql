-- The ids of an erased conversation's jobs: their rows are deleted with the person's data, and a late
-- callback for one of them is answered 410 (erased) rather than 404 (unknown).
CREATE TABLE "ErasedJob" (
    "jobId" UUID NOT NULL,
    "conversationId" UUID NOT NULL,
    "erasedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ErasedJob_pkey" PRIMARY KEY ("jobId")
);

CREATE INDEX "ErasedJob_conversationId_idx" ON "ErasedJob"("conversationId");

ALTER TABLE "ErasedJob" ADD CONSTRAINT "ErasedJob_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;
