-- Outgoing events: the outbox. A row is written in the same transaction as the change it tells of, so an
-- event exists exactly when its change was committed, and its deliveries to the operator's endpoints follow.
CREATE TABLE "HubEvent" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "type" TEXT NOT NULL,
    "conversationId" UUID,
    "channel" TEXT,
    "payload" JSONB NOT NULL,
    "occurredAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "HubEvent_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "HubEvent_seq_key" ON "HubEvent"("seq");
CREATE INDEX "HubEvent_conversationId_seq_idx" ON "HubEvent"("conversationId", "seq");

-- Erasure: the conversation stays as a tombstone (when, by whom) once the person's data is gone.
ALTER TABLE "Conversation" ADD COLUMN "erasedAt" TIMESTAMP(3);
ALTER TABLE "Conversation" ADD COLUMN "erasure" JSONB;
