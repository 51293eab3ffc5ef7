// The WhatsApp and Instagram adapters as configured; a channel without its settings is off.
import type { Config } from "../../config.js";
import type { Queues } from "../../queues.js";
import type { ChannelAdapter } from "../../delivery/channel-port.js";
import { disabledChannel } from "../disabled-channel.js";
import { instagramChannel } from "../instagram/instagram-channel.js";
import { whatsappChannel } from "../whatsapp/whatsapp-channel.js";
import { graphClient } from "./graph-client.js";
import { sendRate } from "./send-rate.js";

export function metaChannels(config: Config, queues: Queues): { whatsapp: ChannelAdapter; instagram: ChannelAdapter } {
  const { whatsapp, instagram, graphApiUrl, igGraphApiUrl, graphApiVersion, waMps } = config.meta;
  return {
    whatsapp: whatsapp
      ? whatsappChannel(
          graphClient(graphApiUrl, graphApiVersion, whatsapp.accessToken),
          whatsapp.phoneNumberId,
          sendRate(queues.redis, `${queues.prefix}:wa-rate:${whatsapp.phoneNumberId}`, waMps),
        )
      : disabledChannel,
    instagram: instagram
      ? instagramChannel(graphClient(igGraphApiUrl, graphApiVersion, instagram.accessToken), instagram.accountId)
      : disabledChannel,
  };
}
