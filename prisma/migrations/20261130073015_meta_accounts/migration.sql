-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "userId" TEXT;

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "deletedAt" TIMESTAMP(3),
ADD COLUMN     "editedAt" TIMESTAMP(3),
ADD COLUMN     "edits" JSONB,
ADD COLUMN     "reaction" TEXT;

-- CreateIndex
CREATE UNIQUE INDEX "Conversation_channel_account_userId_key" ON "Conversation"("channel", "account", "userId");
