-- CreateTable
CREATE TABLE "ErasedMessage" (
    "hash" BYTEA NOT NULL,
    "erasedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ErasedMessage_pkey" PRIMARY KEY ("hash")
);

-- CreateIndex
CREATE INDEX "ErasedMessage_erasedAt_idx" ON "ErasedMessage"("erasedAt");
