-- The sweep looks, every few seconds on every worker, for conversations whose team has opened
-- (src/team/assignment.ts): only the few waiting for an opening are in this index (in the migration only).
CREATE INDEX "Conversation_opensAt_idx" ON "Conversation"("opensAt") WHERE "opensAt" IS NOT NULL;
