// The WhatsApp, Instagram and Messenger adapters for the configured accounts; a channel with no account
// is off.
import type { Config } from "../../config.js";
import type { Queues } from "../../queues.js";
import type { ChannelAdapter } from "../../delivery/channel-port.js";
import { disabledChannel } from "../disabled-channel.js";
import { whatsappChannel } from "../whatsapp/whatsapp-channel.js";
import { graphClient } from "./graph-client.js";
import { accountsOf, type MetaChannel } from "./meta-accounts.js";
import { sendApiChannel } from "./send-api-channel.js";
import { sendRate } from "./send-rate.js";
import { TEXT_LIMITS } from "../../delivery/text-limits.js";

export function metaChannels(config: Config, queues: Queues): Record<MetaChannel, ChannelAdapter> {
  const { accounts, graphApiUrl, igGraphApiUrl, graphApiVersion, waMps } = config.meta;
  const clients = (channel: MetaChannel, baseUrl: string) =>
    new Map(
      accountsOf(accounts, channel).map((account) => [
        account.id,
        { id: account.id, client: graphClient(baseUrl, graphApiVersion, account.accessToken) },
      ]),
    );
  const whatsapp = new Map(
    [...clients("whatsapp", graphApiUrl)].map(([id, account]) => [
      id,
      { ...account, rate: sendRate(queues.redis, `${queues.prefix}:wa-rate:${id}`, waMps) },
    ]),
  );
  const instagram = clients("instagram", igGraphApiUrl);
  const messenger = clients("messenger", graphApiUrl);
  return {
    whatsapp: whatsapp.size > 0 ? whatsappChannel(whatsapp) : disabledChannel,
    instagram: instagram.size > 0 ? sendApiChannel(instagram, TEXT_LIMITS.instagram!) : disabledChannel,
    messenger: messenger.size > 0 ? sendApiChannel(messenger, TEXT_LIMITS.messenger!) : disabledChannel,
  };
}
