// mcptape's report and tape viewer: filters, and anchors that open what holds their target.
// The page reads the same without it (the verdict, the first drift and every section are plain
// HTML); the Content-Security-Policy admits this script by its hash and nothing else.
"use strict";
(function () {
  const all = (selector, root) => Array.from((root || document).querySelectorAll(selector));

  // Controls that only a script can work are hidden in the HTML and shown here.
  all("[data-needs-script]").forEach((el) => { el.hidden = false; });

  // An anchor (report.html#session-NAME) opens the sections that hold its target, shows it if a
  // filter hid it, and moves the focus there so the keyboard goes on from it.
  function reveal() {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id ? document.getElementById(id) : null;
    if (!target) return;
    for (let el = target; el; el = el.parentElement) {
      if (el.tagName === "DETAILS") el.open = true;
      if (el.hidden && el.matches("[data-filtered]")) el.hidden = false;
    }
    if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "start" });
  }
  window.addEventListener("hashchange", reveal);
  reveal();

  // A message of the tape viewer opens where it is (its link's :target works without this script,
  // one at a time and by scrolling; here each link toggles its own, and several stay open).
  document.addEventListener("click", (event) => {
    const link = event.target instanceof Element ? event.target.closest("a.msg") : null;
    if (!link) return;
    const body = document.getElementById(link.getAttribute("href").slice(1));
    if (!body) return;
    event.preventDefault();
    const open = body.classList.toggle("open");
    link.setAttribute("aria-expanded", String(open));
  });

  // The run report: sessions by verdict and by words in them.
  const sessionFilter = document.getElementById("session-filter");
  if (sessionFilter) {
    const text = sessionFilter.querySelector("input[type=search]");
    const count = sessionFilter.querySelector("output");
    const apply = () => {
      const verdicts = new Set(all("input[type=checkbox]:checked", sessionFilter).map((box) => box.value));
      const words = text.value.trim().toLowerCase();
      let shown = 0;
      all("[data-verdict]").forEach((el) => {
        const keep = verdicts.has(el.dataset.verdict) && (!words || el.textContent.toLowerCase().includes(words));
        el.hidden = !keep;
        el.setAttribute("data-filtered", "");
        if (keep && el.tagName === "TR") shown += 1;
      });
      count.value = shown + " shown";
    };
    sessionFilter.addEventListener("input", apply);
    sessionFilter.addEventListener("submit", (event) => event.preventDefault());
    apply();
  }

  // The tape viewer: messages by direction, kind, method, tool and words.
  all("form.event-filter").forEach((form) => {
    const table = document.getElementById(form.dataset.table);
    const rows = all(".ev:not(.head)", table);
    const count = form.querySelector("output");
    const field = (name) => form.elements.namedItem(name);
    const apply = () => {
      const dir = field("dir").value, kind = field("kind").value, method = field("method").value;
      const tool = field("tool").value, words = field("words").value.trim().toLowerCase();
      let shown = 0;
      for (const row of rows) {
        const d = row.dataset;
        const keep = (!dir || d.dir === dir) && (!kind || d.kind === kind) && (!method || d.m === method) &&
          (!tool || d.t === tool) && (!words || row.textContent.toLowerCase().includes(words));
        if (row.hidden === keep) row.hidden = !keep;
        if (keep) shown += 1;
      }
      count.value = shown + " of " + rows.length + " messages";
    };
    form.addEventListener("input", apply);
    form.addEventListener("submit", (event) => event.preventDefault());
    apply();
  });
})();
