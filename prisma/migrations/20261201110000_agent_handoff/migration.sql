-- The LLM agent's hand-off to a person: when it asked, and why (cleared by a hand-back).
ALTER TABLE "Conversation" ADD COLUMN "handoffAt" TIMESTAMP(3),
ADD COLUMN "handoffReason" TEXT;
