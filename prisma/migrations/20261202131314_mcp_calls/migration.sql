-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "mcp" JSONB,
ADD COLUMN     "mcpPollAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "Elicitation" (
    "id" UUID NOT NULL,
    "conversationId" UUID NOT NULL,
    "jobId" UUID,
    "server" TEXT NOT NULL,
    "tool" TEXT,
    "toolCallId" TEXT,
    "owner" TEXT NOT NULL,
    "watchedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "message" TEXT NOT NULL,
    "schema" JSONB NOT NULL,
    "answers" JSONB NOT NULL DEFAULT '{}',
    "field" TEXT,
    "state" TEXT NOT NULL DEFAULT 'asking',
    "questionId" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "answeredAt" TIMESTAMP(3),

    CONSTRAINT "Elicitation_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Elicitation_conversationId_state_idx" ON "Elicitation"("conversationId", "state");

-- CreateIndex
CREATE INDEX "Elicitation_owner_state_idx" ON "Elicitation"("owner", "state");

-- CreateIndex
CREATE INDEX "Job_mcpPollAt_idx" ON "Job"("mcpPollAt");

-- AddForeignKey
ALTER TABLE "Elicitation" ADD CONSTRAINT "Elicitation_conversationId_fkey" FOREIGN KEY ("conversationId") REFERENCES "Conversation"("id") ON DELETE CASCADE ON UPDATE CASCADE;
