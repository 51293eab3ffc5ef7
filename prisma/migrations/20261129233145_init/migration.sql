-- CreateTable
CREATE TABLE "Conversation" (
    "id" UUID NOT NULL,
    "channel" TEXT NOT NULL,
    "account" TEXT NOT NULL DEFAULT '',
    "contact" TEXT NOT NULL,
    "name" TEXT,
    "control" TEXT NOT NULL DEFAULT 'agent',
    "humanAgent" JSONB,
    "lastInboundAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Conversation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Message" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "conversationId" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "text" TEXT,
    "data" JSONB,
    "jobId" UUID,
    "toolCallId" TEXT,
    "clientId" TEXT,
    "externalId" TEXT,
    "status" TEXT,
    "statusReason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Message_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Job" (
    "id" UUID NOT NULL,
    "conversationId" UUID NOT NULL,
    "tool" TEXT NOT NULL,
    "toolCallId" TEXT,
    "arguments" JSONB NOT NULL,
    "argsHash" TEXT NOT NULL,
    "runningKey" TEXT,
    "status" TEXT NOT NULL DEFAULT 'running',
    "acceptMessage" TEXT,
    "result" JSONB,
    "error" TEXT,
    "notifyCount" INTEGER NOT NULL DEFAULT 0,
    "timeoutAt" TIMESTAMP(3) NOT NULL,
    "cancelRequest" TEXT NOT NULL DEFAULT 'none',
    "cancelledBy" TEXT,
    "endedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Job_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "JobProgress" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "jobId" UUID NOT NULL,
    "text" TEXT NOT NULL,
    "notify" BOOLEAN NOT NULL DEFAULT false,
    "delivered" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "JobProgress_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "OutboxItem" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "conversationId" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "jobId" UUID,
    "messageId" UUID,
    "payload" JSONB NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "decision" TEXT,
    "reason" TEXT,
    "enqueuedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "OutboxItem_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Conversation_channel_account_contact_key" ON "Conversation"("channel", "account", "contact");

-- CreateIndex
CREATE UNIQUE INDEX "Message_seq_key" ON "Message"("seq");

-- CreateIndex
CREATE UNIQUE INDEX "Message_externalId_key" ON "Message"("externalId");

-- CreateIndex
CREATE INDEX "Message_conversationId_seq_idx" ON "Message"("conversationId", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "Message_conversationId_clientId_key" ON "Message"("conversationId", "clientId");

-- CreateIndex
CREATE UNIQUE INDEX "Job_runningKey_key" ON "Job"("runningKey");

-- CreateIndex
CREATE INDEX "Job_conversationId_status_idx" ON "Job"("conversationId", "status");

-- CreateIndex
CREATE INDEX "Job_status_timeoutAt_idx" ON "Job"("status", "timeoutAt");

-- CreateIndex
CREATE UNIQUE INDEX "JobProgress_seq_key" ON "JobProgress"("seq");

-- CreateIndex
CREATE INDEX "JobProgress_jobId_seq_idx" ON "JobProgress"("jobId", "seq");

-- CreateIndex
CREATE UNIQUE INDEX "OutboxItem_seq_key" ON "OutboxItem"("seq");

-- CreateIndex
CREATE UNIQUE INDEX "OutboxItem_key_key" ON "OutboxItem"("key");

-- CreateIndex
CREATE INDEX "OutboxItem_state_enqueuedAt_idx" ON "OutboxItem"("state", "enqueuedAt");

-- CreateIndex
CREATE INDEX "OutboxItem_conversationId_state_seq_idx" ON "OutboxItem"("conversationId", "state", "seq");

-- AddForeignKey
ALTER TABLE "Message" ADD CONSTRAINT "Message_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Job" ADD CONSTRAINT "Job_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "JobProgress" ADD CONSTRAINT "JobProgress_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "OutboxItem" ADD CONSTRAINT "OutboxItem_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;
