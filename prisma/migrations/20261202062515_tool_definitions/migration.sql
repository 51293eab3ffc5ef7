-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "correctedAt" TIMESTAMP(3),
ADD COLUMN     "correctedResult" JSONB,
ADD COLUMN     "toolDefinition" JSONB,
ADD COLUMN     "toolVersion" TEXT;
