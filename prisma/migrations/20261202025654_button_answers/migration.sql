-- A tap's payload is taken only from choices offered in the conversation, each offer answered once: the
-- person's message that answered an outgoing message's buttons.
ALTER TABLE "Message" ADD COLUMN "answeredBy" UUID;
