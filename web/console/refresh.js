// Re-reading, debounced and never overlapping: every live event only schedules a re-read, so the page always
// shows what the hub stored.
const REFRESH_DEBOUNCE_MS = 150;

/** A refresher: `schedule()` coalesces calls; a call during a run causes one more run afterwards. */
export function refresher(run) {
  let timer;
  let running = false;
  let again = false;
  async function go() {
    timer = undefined;
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      await run();
    } finally {
      running = false;
      if (again) {
        again = false;
        schedule(0);
      }
    }
  }
  function schedule(delay) {
    if (timer !== undefined) return;
    timer = setTimeout(go, delay === undefined ? REFRESH_DEBOUNCE_MS : delay);
  }
  return { schedule, now: () => go() };
}

/** What each re-read does: set by the list and conversation modules, so any module can ask for one. */
export const loaders = { list: async () => {}, timeline: async () => {} };
export const listRefresh = refresher(() => loaders.list());
export const timelineRefresh = refresher(() => loaders.timeline());
