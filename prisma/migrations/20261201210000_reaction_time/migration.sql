-- Meta delivers a message's reactions in any order and retries them: the time of the one on the message
-- lets an earlier reaction (or withdrawal) that arrives late leave a later one alone.
ALTER TABLE "Message" ADD COLUMN "reactedAt" TIMESTAMP(3);
