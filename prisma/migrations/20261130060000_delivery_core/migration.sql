-- The outbox becomes what it is: the inputs of a conversation's next turn. Outgoing messages are the
-- Message rows with a delivery status, and direct messages (agent or human) are no longer inputs.
-- (No semicolon may appear in a comment here: the PostgreSQL adapter splits the script on them.)
ALTER TABLE "OutboxItem" RENAME TO "TurnInput";
ALTER TABLE "TurnInput" RENAME CONSTRAINT "OutboxItem_pkey" TO "TurnInput_pkey";
ALTER TABLE "TurnInput" RENAME CONSTRAINT "OutboxItem_conversationId_fkey" TO "TurnInput_conversationId_fkey";
ALTER SEQUENCE "OutboxItem_seq_seq" RENAME TO "TurnInput_seq_seq";
ALTER INDEX "OutboxItem_seq_key" RENAME TO "TurnInput_seq_key";
ALTER INDEX "OutboxItem_key_key" RENAME TO "TurnInput_key_key";
ALTER INDEX "OutboxItem_conversationId_state_seq_idx" RENAME TO "TurnInput_conversationId_state_seq_idx";
DROP INDEX "OutboxItem_state_enqueuedAt_idx";
ALTER TABLE "TurnInput" DROP COLUMN "enqueuedAt";
ALTER TABLE "TurnInput" RENAME COLUMN "replyMessageId" TO "replyId";
UPDATE "TurnInput" SET "state" = 'answered' WHERE "state" = 'done';
DELETE FROM "TurnInput" WHERE "kind" IN ('agent_message', 'human_message');

CREATE INDEX "TurnInput_state_updatedAt_idx" ON "TurnInput"("state", "updatedAt");
CREATE INDEX "TurnInput_replyId_idx" ON "TurnInput"("replyId");

-- Fewer indexes to keep up on every write of the busiest tables. A seq comes from its sequence: it needs
-- no unique index of its own. A message's status is not indexed, so a status change can be a HOT update
-- (no index written), except for the few pending rows, which a partial index finds (for a turn, and for
-- the sweep). Prisma's schema cannot declare a partial index: it lives here only.
DROP INDEX "Message_seq_key";
DROP INDEX "TurnInput_seq_key";
DROP INDEX "JobProgress_seq_key";
CREATE INDEX "Message_pending_idx" ON "Message"("conversationId") WHERE "status" = 'pending';
ALTER TABLE "Message" SET (fillfactor = 85);
