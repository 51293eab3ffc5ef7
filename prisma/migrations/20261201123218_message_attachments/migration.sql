-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "attachments" JSONB;

-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "attachments" JSONB,
ADD COLUMN     "buttons" JSONB;
