// hermes-state serve: the page's only script. It is served as a file
// (the Content-Security-Policy allows no inline script) and only ever
// inserts HTML the server rendered and escaped.
(function () {
  'use strict';

  // Search as you type: the results block is fetched again (the server
  // renders it, ?partial=1) and swapped in; the address follows, so the
  // page can be shared or reloaded as it is.
  var form = document.getElementById('search-form');
  if (form) {
    var q = document.getElementById('q');
    var timer = null;
    var seq = 0;
    var run = function () {
      var params = new URLSearchParams(new FormData(form));
      var mine = ++seq;
      history.replaceState(null, '', '/search?' + params.toString());
      params.set('partial', '1');
      fetch('/search?' + params.toString(), { credentials: 'same-origin' })
        .then(function (r) { return r.text().then(function (t) { return { ok: r.ok, text: t }; }); })
        .then(function (res) {
          if (mine !== seq) { return; }
          var doc = new DOMParser().parseFromString(res.text, 'text/html');
          var fresh = doc.getElementById('results');
          var old = document.getElementById('results');
          if (!old) { return; }
          if (fresh) {
            old.replaceWith(document.importNode(fresh, true));
          } else {
            var err = doc.getElementById('error');
            var p = document.createElement('p');
            p.className = 'error';
            p.id = 'not-run';
            p.textContent = err ? err.textContent : 'the search failed';
            old.replaceChildren(p);
          }
        })
        .catch(function () {});
    };
    q.addEventListener('input', function () { clearTimeout(timer); timer = setTimeout(run, 150); });
    form.addEventListener('change', function (e) { if (e.target !== q) { clearTimeout(timer); run(); } });
    form.addEventListener('submit', function (e) { e.preventDefault(); clearTimeout(timer); run(); });
  }

  // "N more": the count of the hits after the page is fetched after the
  // page (counting up to 200 of them would delay the hits themselves).
  var countMore = function () {
    var el = document.getElementById('more');
    if (!el || !el.dataset.count || el.dataset.done) { return; }
    el.dataset.done = '1';
    fetch(el.dataset.count, { credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.text() : ''; })
      .then(function (t) { if (/^\d+\+? more$/.test(t)) { el.textContent = t; } })
      .catch(function () {});
  };
  countMore();
  if (form) {
    new MutationObserver(countMore).observe(document.querySelector('main'), { childList: true, subtree: true });
  }

  // A conversation opened at #m123: open the folds around that message
  // and bring it into view; when it is on another page of a long session,
  // ask the server where it is (/s/ID/m/123 redirects there).
  var session = document.getElementById('session');
  if (session) {
    var reveal = function () {
      var m = /^#m(\d+)$/.exec(location.hash);
      if (!m) { return; }
      var el = document.getElementById('m' + m[1]);
      if (!el) {
        if (sessionStorage.getItem('hs-jump') === location.href) { return; }
        sessionStorage.setItem('hs-jump', location.href);
        location.replace('/s/' + encodeURIComponent(session.dataset.id) + '/m/' + m[1]);
        return;
      }
      sessionStorage.removeItem('hs-jump');
      for (var p = el.parentElement; p; p = p.parentElement) {
        if (p.tagName === 'DETAILS') { p.open = true; }
      }
      el.scrollIntoView({ block: 'center' });
    };
    window.addEventListener('hashchange', reveal);
    reveal();
  }
})();
