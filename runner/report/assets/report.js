// Run report: opening calls, search and filters. Inlined into the page at build time and allowed
// by the page's Content-Security-Policy through its hash only.
(() => {
  const calls = Array.from(document.querySelectorAll("details.call"));
  const search = document.getElementById("search");
  const role = document.getElementById("filter-role");
  const tool = document.getElementById("filter-tool");
  const failed = document.getElementById("filter-failed");
  const count = document.getElementById("shown");
  const ENTITIES = { "&lt;": "<", "&gt;": ">", "&quot;": '"', "&#39;": "'", "&amp;": "&" };

  // A call's body arrives as text in an inert <textarea> (see html.ts): its value is the body's
  // markup, in which every string from the run is escaped. It enters the DOM when the call opens.
  function materialize(call) {
    const source = call.querySelector(":scope > textarea.body-src");
    if (!source) return;
    const body = document.createElement("div");
    body.className = "body";
    body.innerHTML = source.value;
    source.replaceWith(body);
  }

  document.addEventListener(
    "toggle",
    (event) => {
      const target = event.target;
      if (target instanceof HTMLDetailsElement && target.open && target.classList.contains("call"))
        materialize(target);
    },
    true,
  );

  /** What a reader sees of a call, lower-cased, without building its DOM. */
  function searchText(call) {
    const source = call.querySelector(":scope > textarea.body-src");
    const body = source
      ? source.value.replace(/<[^>]*>/g, " ").replace(/&(?:lt|gt|quot|#39|amp);/g, (e) => ENTITIES[e])
      : "";
    return `${call.textContent} ${body}`.toLowerCase();
  }

  // Computed on the first search only (the expensive part on long runs).
  let texts = null;

  function apply() {
    const query = search.value.trim().toLowerCase();
    if (query && !texts) texts = calls.map(searchText);
    let shown = 0;
    calls.forEach((call, i) => {
      const visible =
        (!role.value || call.dataset.role === role.value) &&
        (!tool.value || (call.dataset.tools || "").split(" ").includes(tool.value)) &&
        (!failed.checked || call.dataset.failed === "1") &&
        (!query || texts[i].includes(query));
      call.hidden = !visible;
      if (visible) shown++;
    });
    count.textContent = `${shown} of ${calls.length} calls shown`;
    document.body.dataset.filtered = String(performance.now());
  }

  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 80);
  });
  for (const control of [role, tool, failed]) control.addEventListener("change", apply);

  // A link to a call (or into one) opens it and every section around it.
  function openTarget() {
    for (let el = document.getElementById(location.hash.slice(1)); el; el = el.parentElement)
      if (el.tagName === "DETAILS") el.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  if (location.hash) openTarget();
  apply();
})();
