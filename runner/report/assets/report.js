// Run report: search and filters over the calls of the timeline. Inlined into the page at build
// time and allowed by the page's Content-Security-Policy through its hash only.
(() => {
  const calls = Array.from(document.querySelectorAll(".call"));
  const search = document.getElementById("search");
  const role = document.getElementById("filter-role");
  const tool = document.getElementById("filter-tool");
  const failed = document.getElementById("filter-failed");
  const count = document.getElementById("shown");
  // Lower-cased text per call, computed on the first search (expensive on long runs).
  let texts = null;

  function apply() {
    const query = search.value.trim().toLowerCase();
    if (query && !texts) texts = calls.map((c) => c.textContent.toLowerCase());
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
    document.body.dataset.filtered = String(Date.now());
  }

  let timer = 0;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 120);
  });
  for (const control of [role, tool, failed]) control.addEventListener("change", apply);
  // A link to a call opens it.
  window.addEventListener("hashchange", () => {
    for (let el = document.getElementById(location.hash.slice(1)); el; el = el.parentElement)
      if (el.tagName === "DETAILS") el.open = true;
  });
  apply();
})();
