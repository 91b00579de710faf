// lakestats pages, no framework, no CDN:
// - the partition selector submits itself when it changes;
// - the table page fills its histogram and top-value cells from /tables/{name}/cells,
//   and its overview and alerts from /tables/{name}/overview, after the first paint (the
//   statistics themselves are in the HTML already).
document.addEventListener("DOMContentLoaded", () => {
  for (const select of document.querySelectorAll("select.autosubmit")) {
    select.addEventListener("change", () => select.form.submit());
  }
  const overview = document.getElementById("overview");
  if (overview && overview.dataset.src) {
    fetch(overview.dataset.src)
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((html) => {
        overview.innerHTML = html; // server-escaped fragment
        overview.dataset.loaded = "true";
      })
      .catch((status) => {
        overview.dataset.loaded = "error";
        console.warn("lakestats: overview not loaded", status);
      });
  }
  const body = document.getElementById("columns-body");
  if (!body || !body.dataset.cells) return;
  fetch(body.dataset.cells, { headers: { Accept: "application/json" } })
    .then((response) => (response.ok ? response.json() : Promise.reject(response.status)))
    .then((cells) => {
      for (const row of body.querySelectorAll("tr[data-column]")) {
        const cell = cells[row.dataset.column];
        if (!cell) continue;
        row.querySelector("td.hist").innerHTML = cell.hist; // server-escaped fragments
        row.querySelector("td.top").innerHTML = cell.top;
      }
      body.dataset.loaded = "true";
    })
    .catch((status) => {
      body.dataset.loaded = "error";
      console.warn("lakestats: histogram cells not loaded", status);
    });
});
