-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "traceParent" TEXT;
