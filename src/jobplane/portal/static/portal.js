// Progressive enhancement only: every page works without this file.
// 1. Forms (or buttons) with data-confirm ask before posting.
// 2. A section with data-live-url is refreshed in place while its execution runs.
"use strict";

document.addEventListener("submit", (event) => {
  const button = event.submitter;
  const message = (button && button.dataset.confirm) || event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

function liveSections() {
  for (const section of document.querySelectorAll("[data-live-url]")) {
    const running = () => section.dataset.liveWhile === "always" ||
      section.querySelector("[data-running='true']") !== null || section.dataset.running === "true";
    const refresh = async () => {
      if (!running() || document.hidden) return schedule();
      const editing = section.contains(document.activeElement) &&
        ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
      if (!editing) {
        try {
          const response = await fetch(section.dataset.liveUrl, {headers: {"Accept": "text/html"}});
          if (response.ok) {
            const openLogs = new Set([...section.querySelectorAll("details[open]")].map((d) => d.dataset.logStep));
            section.innerHTML = await response.text();
            section.dataset.running = section.querySelector("[data-running='true']") ? "true" : "false";
            for (const d of section.querySelectorAll("details")) if (openLogs.has(d.dataset.logStep)) d.open = true;
          }
        } catch (e) { /* the next poll retries */ }
      }
      schedule();
    };
    const schedule = () => setTimeout(refresh, section.dataset.liveWhile === "always" ? 3000 : 1000);
    schedule();
  }
}
document.addEventListener("DOMContentLoaded", liveSections);
