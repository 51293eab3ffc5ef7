-- AlterTable
ALTER TABLE "Conversation" ADD COLUMN     "closedAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "rerunAs" UUID,
ADD COLUMN     "rerunOf" UUID,
ADD COLUMN     "startRequest" TEXT NOT NULL DEFAULT 'sent';

-- AlterTable
ALTER TABLE "TurnInput" ADD COLUMN     "expiresAt" TIMESTAMP(3);

-- The sweep's two new questions, each answered by a partial index that holds only the few rows concerned:
-- results still to give that carry an expiry, and re-runs whose start call is owed. (Prisma's schema
-- cannot declare a partial index: they live here only.)
CREATE INDEX "TurnInput_expiry_idx" ON "TurnInput"("expiresAt")
  WHERE "expiresAt" IS NOT NULL AND "state" IN ('pending', 'held', 'awaiting_reply');
CREATE INDEX "Job_start_owed_idx" ON "Job"("createdAt") WHERE "startRequest" = 'pending';
