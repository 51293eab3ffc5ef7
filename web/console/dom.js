// DOM helpers and formatting shared by the console's views: nothing here knows about the hub.

export const $ = (id) => document.getElementById(id);

/** An element with attributes (`text`, `class`, anything else as an attribute; false/null/undefined skipped). */
export function el(tag, attributes, children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children || []) if (child) node.appendChild(child);
  return node;
}

export function chip(text, kind, title) {
  return el("span", { class: `chip chip-${kind || "plain"}`, text, title });
}

export function formatTime(iso, withSeconds) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const sameDay = date.toDateString() === new Date().toDateString();
  const time = date.toLocaleTimeString([], {
    hour: "2-digit",
    minute: "2-digit",
    ...(withSeconds ? { second: "2-digit" } : {}),
  });
  return sameDay ? time : `${date.toLocaleDateString([], { month: "short", day: "numeric" })} ${time}`;
}

/** A span of time as people say it: "less than a minute", "4 min", "2 h 5 min", "3 days". */
export function duration(ms) {
  const minutes = Math.floor(Math.abs(ms) / 60_000);
  if (minutes < 1) return "less than a minute";
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  return `${Math.floor(hours / 24)} days`;
}

export function compact(value, max) {
  let text;
  try {
    text = typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    text = String(value);
  }
  text = text === undefined ? "" : text;
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Only web links are opened: a `javascript:` or `data:` URL never becomes a link in the console. */
export function webLink(url) {
  try {
    const parsed = new URL(String(url));
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}
