// lakestats pages: submit the partition selector when it changes (no framework, no CDN).
document.addEventListener("DOMContentLoaded", () => {
  for (const select of document.querySelectorAll("select.autosubmit")) {
    select.addEventListener("change", () => select.form.submit());
  }
});
