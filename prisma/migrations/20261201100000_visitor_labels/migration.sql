-- Anonymous widget conversations were stored under the visitor id itself, which is the credential that opens
-- them. They move to the label derived from it (src/channels/widget/visitor-id.ts, visitorLabel): 'anon-' and
-- the first 12 bytes of SHA-256('visitor-label:' || id), in hex. A hub-issued id still finds its conversation.
UPDATE "Conversation"
SET contact = 'anon-' || encode(substring(sha256(convert_to('visitor-label:' || contact, 'UTF8')) FROM 1 FOR 12), 'hex'),
    "updatedAt" = now()
WHERE account = 'widget' AND contact NOT LIKE 'anon-%';
