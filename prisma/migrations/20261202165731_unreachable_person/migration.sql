-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "unreachableAt" TIMESTAMP(3),
ADD COLUMN     "unreachableReason" TEXT;
