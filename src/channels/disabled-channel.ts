// A channel that is not configured on this hub: the router records `failed: channel_off` before using it.
import type { ChannelAdapter } from "../delivery/channel-port.js";

export const disabledChannel: ChannelAdapter = {
  enabled: false,
  async send() {
    return { status: "failed", decision: "failed", code: "channel_off" };
  },
};
