(function () {
  var byId = function (id) { return document.getElementById(id); };
  var items = Array.prototype.slice.call(document.querySelectorAll("#sample-list > details.sample"));
  var controls = ["f-status", "f-group", "f-error", "f-text"];
  function apply() {
    var st = byId("f-status").value, g = byId("f-group").value, er = byId("f-error").value;
    var tx = byId("f-text").value.trim().toLowerCase(), shown = 0;
    items.forEach(function (el) {
      var pass = el.dataset.pass.split(" "), ok = true;
      if (st === "fail") ok = pass.indexOf("0") >= 0;
      else if (st === "pass") ok = pass.indexOf("0") < 0;
      else if (st === "disagree") ok = el.dataset.disagree === "1";
      else if (st.indexOf("fail-") === 0) ok = pass[+st.slice(5)] === "0";
      if (ok && g) ok = el.dataset.group === g;
      if (ok && er) ok = el.dataset.errors.split(" ").indexOf(er) >= 0;
      if (ok && tx) ok = el.dataset.id.toLowerCase().indexOf(tx) >= 0;
      el.hidden = !ok;
      if (ok) shown++;
    });
    byId("f-count").textContent = shown + " of " + items.length + " samples shown";
  }
  controls.forEach(function (id) { byId(id).addEventListener("input", apply); byId(id).addEventListener("change", apply); });
  apply();
})();
