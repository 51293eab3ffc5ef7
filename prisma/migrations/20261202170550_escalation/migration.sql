-- AlterTable
ALTER TABLE "Message" ADD COLUMN     "escalatedAs" UUID,
ADD COLUMN     "escalatedAt" TIMESTAMP(3),
ADD COLUMN     "escalatedTo" TEXT;

-- CreateTable
CREATE TABLE "PersonReach" (
    "identifier" TEXT NOT NULL,
    "channel" TEXT NOT NULL,
    "contact" TEXT NOT NULL,
    "account" TEXT NOT NULL,
    "consentedAt" TIMESTAMP(3) NOT NULL,
    "consentSource" TEXT NOT NULL,
    "consentText" TEXT NOT NULL,
    "recordedAt" TIMESTAMP(3) NOT NULL,
    "revokedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PersonReach_pkey" PRIMARY KEY ("identifier","channel")
);

-- CreateIndex
CREATE INDEX "PersonReach_channel_contact_idx" ON "PersonReach"("channel", "contact");

-- The sweep's look for results left unseen (src/delivery/escalation.ts), by age: only agent messages stored or
-- live and not escalated, and the sweep reads only the recent end of it.
CREATE INDEX "Message_unseen_idx" ON "Message"("createdAt")
  WHERE "role" = 'agent' AND "status" IN ('stored', 'live') AND "escalatedTo" IS NULL;
