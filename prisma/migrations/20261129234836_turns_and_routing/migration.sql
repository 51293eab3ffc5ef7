-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "templateSentAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "decision" TEXT,
ADD COLUMN     "turnId" UUID;

-- AlterTable
ALTER TABLE "OutboxItem" ADD COLUMN     "replyMessageId" UUID,
ADD COLUMN     "turnId" UUID;
