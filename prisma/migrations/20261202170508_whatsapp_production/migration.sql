-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "marketingHeldUntil" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "WhatsappTemplate" (
    "name" TEXT NOT NULL,
    "language" TEXT NOT NULL,
    "templateId" TEXT,
    "status" TEXT,
    "reason" TEXT,
    "statusAt" TIMESTAMP(3),
    "category" TEXT,
    "previousCategory" TEXT,
    "categoryAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "WhatsappTemplate_pkey" PRIMARY KEY ("name","language")
);

-- CreateTable
CREATE TABLE "MessageCharge" (
    "externalId" TEXT NOT NULL,
    "messageId" UUID,
    "conversationId" UUID,
    "jobId" UUID,
    "billable" BOOLEAN,
    "pricingModel" TEXT,
    "category" TEXT,
    "type" TEXT,
    "metaConversation" JSONB,
    "at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "MessageCharge_pkey" PRIMARY KEY ("externalId")
);

-- CreateIndex
CREATE INDEX "MessageCharge_jobId_idx" ON "MessageCharge"("jobId");
