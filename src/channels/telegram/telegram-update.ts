// A Telegram Update as the webhook delivers it (Bot API, "Update"), checked at the edge: the fields the hub
// reads must have their documented types; anything else Telegram adds is kept as it came.
import { z } from "zod";

const user = z.looseObject({
  id: z.number().int(),
  is_bot: z.boolean().optional(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  username: z.string().optional(),
});

const chat = z.looseObject({
  id: z.number().int(),
  type: z.string(),
  first_name: z.string().optional(),
  last_name: z.string().optional(),
  title: z.string().optional(),
});

const file = {
  file_id: z.string().min(1),
  file_unique_id: z.string().optional(),
  file_size: z.number().int().nonnegative().optional(),
};

const message = z.looseObject({
  message_id: z.number().int(),
  from: user.optional(),
  chat,
  date: z.number().int(),
  text: z.string().optional(),
  caption: z.string().optional(),
  photo: z.array(z.looseObject({ ...file, width: z.number().int(), height: z.number().int() })).optional(),
  document: z.looseObject({ ...file, file_name: z.string().optional(), mime_type: z.string().optional() }).optional(),
  voice: z.looseObject({ ...file, duration: z.number().optional(), mime_type: z.string().optional() }).optional(),
});

export const telegramUpdateSchema = z.looseObject({
  update_id: z.number().int().nonnegative(),
  message: message.optional(),
  callback_query: z
    .looseObject({
      id: z.string().min(1),
      from: user,
      message: message.optional(),
      data: z.string().optional(),
    })
    .optional(),
  my_chat_member: z
    .looseObject({
      chat,
      from: user,
      date: z.number().int(),
      new_chat_member: z.looseObject({ status: z.string() }),
    })
    .optional(),
});

export type TelegramUpdate = z.output<typeof telegramUpdateSchema>;
export type TelegramMessage = z.output<typeof message>;
