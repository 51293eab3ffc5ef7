-- CreateTable
CREATE TABLE "PushDevice" (
    "id" UUID NOT NULL,
    "conversationId" UUID NOT NULL,
    "platform" TEXT NOT NULL,
    "address" TEXT NOT NULL,
    "keys" JSONB,
    "url" TEXT,
    "droppedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PushDevice_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PushSend" (
    "id" UUID NOT NULL,
    "messageId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "nextAttemptAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "reason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PushSend_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "PushDevice_address_key" ON "PushDevice"("address");

-- CreateIndex
CREATE INDEX "PushDevice_conversationId_idx" ON "PushDevice"("conversationId");

-- CreateIndex
CREATE INDEX "PushSend_state_nextAttemptAt_idx" ON "PushSend"("state", "nextAttemptAt");

-- CreateIndex
CREATE INDEX "PushSend_deviceId_idx" ON "PushSend"("deviceId");

-- CreateIndex
CREATE UNIQUE INDEX "PushSend_messageId_deviceId_key" ON "PushSend"("messageId", "deviceId");

-- AddForeignKey
ALTER TABLE "PushDevice" ADD CONSTRAINT "PushDevice_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PushSend" ADD CONSTRAINT "PushSend_messageId_fkey" FOREIGN KEY ("messageId") REFERENCES "Message"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PushSend" ADD CONSTRAINT "PushSend_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "PushDevice"("id") ON DELETE CASCADE ON UPDATE CASCADE;
