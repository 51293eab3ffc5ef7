-- CreateTable
CREATE TABLE "InboundEmail" (
    "id" UUID NOT NULL,
    "messageId" TEXT NOT NULL,
    "raw" BYTEA NOT NULL,
    "receivedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "processedAt" TIMESTAMP(3),

    CONSTRAINT "InboundEmail_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "InboundEmail_messageId_key" ON "InboundEmail"("messageId");

-- CreateIndex
CREATE INDEX "InboundEmail_processedAt_receivedAt_idx" ON "InboundEmail"("processedAt", "receivedAt");
