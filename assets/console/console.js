// The console's script: confirmations, the copy button, uploads and single sign-on's binding. Pages
// work without it, except single sign-on.

// A size as people read it (the pages' own, `views::human_size`); exact bytes go in a title.
function humanSize(n) {
  var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + ' ' + u[i];
}
document.addEventListener('click', function (e) {
  var t = e.target;
  if (t.dataset && t.dataset.confirm && !window.confirm(t.dataset.confirm)) {
    e.preventDefault();
  }
  if (t.dataset && t.dataset.copy) {
    var input = document.getElementById(t.dataset.copy);
    input.select();
    if (navigator.clipboard) { navigator.clipboard.writeText(input.value); }
    t.textContent = 'Copied';
  }
});

// Uploads: the console starts a multipart upload as the signed-in key and signs a URL per
// part; the parts go straight to the S3 endpoint, a few at a time, each retried on failure;
// then the console completes the upload (or aborts it when cancelled).
(function () {
  var box = document.getElementById('upload');
  if (!box) { return; }
  var bucket = box.dataset.bucket, prefix = box.dataset.prefix, csrf = box.dataset.csrf;
  var PARTS_AT_ONCE = 4, FILES_AT_ONCE = 2, TRIES = 4;
  var jobs = [], waiting = [], running = 0;
  var total = document.getElementById('total'), totalText = document.getElementById('total-text');
  var queue = document.getElementById('queue'), refresh = document.getElementById('refresh');

  var size = humanSize;
  // The bars' values are attributes, so that what they show can be observed.
  function show(bar, value, max) {
    bar.setAttribute('max', String(Math.max(max, 1)));
    bar.setAttribute('value', String(value));
  }
  function post(path, fields) {
    var body = new URLSearchParams(fields);
    body.set('csrf', csrf);
    return fetch(path, { method: 'POST', body: body, credentials: 'same-origin' }).then(function (r) {
      if (r.redirected) { throw new Error('The session has ended: sign in again'); }
      return r.text().then(function (t) {
        var j = null;
        try { j = JSON.parse(t); } catch (e) { j = { error: 'HTTP ' + r.status }; }
        if (!r.ok || j.error) { throw new Error(j.error || ('HTTP ' + r.status)); }
        return j;
      });
    });
  }
  function sent(job) { return job.sent.reduce(function (a, b) { return a + b; }, 0); }
  function update() {
    var s = 0, m = 0, busy = false;
    jobs.forEach(function (j) {
      if (j.state !== 'cancelled') { s += sent(j); m += j.size; }
      if (j.state === 'waiting' || j.state === 'uploading') { busy = true; }
    });
    show(total, s, m);
    totalText.textContent = size(s) + ' of ' + size(m);
    refresh.hidden = busy;
  }
  function setState(job, state, text) {
    job.state = state;
    job.row.className = 'state-' + state;
    job.row.dataset.state = state;
    job.label.textContent = text;
    // Done, failed or cancelled: nothing left to cancel (issue 59: the button stayed usable).
    var live = state === 'waiting' || state === 'uploading';
    job.cancel.hidden = !live;
    job.cancel.disabled = !live;
    update();
  }
  function add(file, rel) {
    var li = document.createElement('li');
    var name = document.createElement('span');
    name.className = 'name';
    name.textContent = prefix + rel; // a key is always text
    var bar = document.createElement('progress');
    bar.setAttribute('aria-label', 'progress of ' + rel);
    var label = document.createElement('span');
    label.className = 'state';
    var cancel = document.createElement('button');
    cancel.type = 'button';
    cancel.textContent = 'Cancel';
    li.append(name, bar, label, cancel);
    queue.append(li);
    var job = { file: file, key: prefix + rel, size: file.size, sent: [], xhrs: [], row: li, bar: bar, label: label, cancel: cancel };
    cancel.addEventListener('click', function () { stop(job); });
    jobs.push(job);
    show(bar, 0, file.size);
    setState(job, 'waiting', 'waiting');
    waiting.push(job);
    document.getElementById('uploads').hidden = false;
    pump();
  }
  function pump() {
    while (running < FILES_AT_ONCE && waiting.length) {
      var job = waiting.shift();
      if (job.state !== 'waiting') { continue; }
      running++;
      run(job).then(function () { running--; pump(); });
    }
  }
  function stop(job) {
    if (job.state !== 'waiting' && job.state !== 'uploading') { return; }
    setState(job, 'cancelled', 'cancelled');
    job.xhrs.forEach(function (x) { x.abort(); });
    if (job.uploadId) {
      post('/uploads/abort', { bucket: bucket, key: job.key, uploadId: job.uploadId })
        .catch(function (e) { job.label.textContent = 'cancelled; ' + e.message; });
    }
  }
  function putOnce(job, p) {
    return new Promise(function (resolve, reject) {
      var x = new XMLHttpRequest();
      job.xhrs.push(x);
      x.open('PUT', p.url);
      x.upload.onprogress = function (e) {
        job.sent[p.n - 1] = e.loaded;
        show(job.bar, sent(job), job.size);
        update();
      };
      x.onload = function () {
        var etag = x.getResponseHeader('ETag');
        if (x.status === 200 && etag) { resolve(etag); return; }
        var code = /<Code>([^<]*)<\/Code>/.exec(x.responseText || '');
        var err = new Error('part ' + p.n + ': HTTP ' + x.status + (code ? ' ' + code[1] : ''));
        err.final = x.status === 403 || x.status === 404 || x.status === 400;
        reject(err);
      };
      x.onerror = function () { reject(new Error('part ' + p.n + ': the connection failed')); };
      x.onabort = function () { reject(new Error('cancelled')); };
      x.send(job.file.slice(p.start, p.end));
    });
  }
  function putPart(job, p, attempt) {
    return putOnce(job, p).catch(function (e) {
      job.sent[p.n - 1] = 0;
      if (job.state !== 'uploading' || e.final || attempt + 1 >= TRIES) { throw e; }
      job.label.textContent = e.message + ', retrying';
      return new Promise(function (r) { setTimeout(r, 500 * Math.pow(2, attempt)); })
        .then(function () { return putPart(job, p, attempt + 1); });
    });
  }
  function run(job) {
    setState(job, 'uploading', 'starting');
    return post('/uploads/start', { bucket: bucket, key: job.key, size: String(job.size), type: job.file.type || '' })
      .then(function (s) {
        job.uploadId = s.uploadId;
        if (job.state !== 'uploading') {
          // Cancelled while it started: nothing was sent, the upload is aborted.
          post('/uploads/abort', { bucket: bucket, key: job.key, uploadId: job.uploadId }).catch(function () {});
          throw new Error('cancelled');
        }
        job.label.textContent = 'uploading';
        var parts = s.urls.map(function (url, i) {
          return { n: i + 1, url: url, start: i * s.partSize, end: Math.min(job.size, (i + 1) * s.partSize) };
        });
        job.sent = parts.map(function () { return 0; });
        var etags = [], next = 0;
        function worker() {
          if (next >= parts.length || job.state !== 'uploading') { return Promise.resolve(); }
          var p = parts[next++];
          return putPart(job, p, 0).then(function (etag) { etags[p.n - 1] = etag; return worker(); });
        }
        var workers = [];
        for (var i = 0; i < PARTS_AT_ONCE; i++) { workers.push(worker()); }
        return Promise.all(workers).then(function () {
          if (job.state !== 'uploading') { throw new Error('cancelled'); }
          job.label.textContent = 'completing';
          return post('/uploads/complete', { bucket: bucket, key: job.key, uploadId: job.uploadId, etags: etags.join('\n') });
        });
      })
      .then(function () { show(job.bar, job.size, job.size); setState(job, 'done', 'uploaded'); })
      .catch(function (e) {
        if (job.state === 'cancelled') { return; }
        setState(job, 'failed', 'failed: ' + e.message);
        job.xhrs.forEach(function (x) { x.abort(); });
        if (job.uploadId) { post('/uploads/abort', { bucket: bucket, key: job.key, uploadId: job.uploadId }).catch(function () {}); }
      });
  }
  function addFiles(list) {
    Array.prototype.forEach.call(list, function (f) { add(f, f.webkitRelativePath || f.name); });
  }
  document.getElementById('pick-files').addEventListener('change', function (e) { addFiles(e.target.files); e.target.value = ''; });
  document.getElementById('pick-folder').addEventListener('change', function (e) { addFiles(e.target.files); e.target.value = ''; });
  document.getElementById('cancel-all').addEventListener('click', function () { jobs.forEach(stop); });
  refresh.addEventListener('click', function (e) { e.preventDefault(); window.location.reload(); });
  // Drag and drop, folders included (walked through the entries API).
  var drop = document.getElementById('drop');
  function walk(entry, path) {
    if (entry.isFile) {
      entry.file(function (f) { add(f, path + f.name); });
    } else if (entry.isDirectory) {
      var reader = entry.createReader();
      var more = function () {
        reader.readEntries(function (es) {
          es.forEach(function (c) { walk(c, path + entry.name + '/'); });
          if (es.length) { more(); }
        });
      };
      more();
    }
  }
  drop.addEventListener('dragover', function (e) { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', function () { drop.classList.remove('over'); });
  drop.addEventListener('drop', function (e) {
    e.preventDefault();
    drop.classList.remove('over');
    var items = e.dataTransfer.items;
    if (items && items.length && items[0].webkitGetAsEntry) {
      Array.prototype.forEach.call(items, function (it) {
        var en = it.webkitGetAsEntry();
        if (en) { walk(en, ''); }
      });
    } else {
      addFiles(e.dataTransfer.files);
    }
  });
})();

// A setting that is not set: its example, a placeholder, is put in the editor on request.
document.querySelectorAll('button[data-example-for]').forEach(function (b) {
  b.hidden = false;
  b.addEventListener('click', function () {
    var ed = document.getElementById(b.dataset.exampleFor);
    ed.value = ed.placeholder;
    ed.focus();
  });
});

// A change that would make the bucket public waits on the server for its confirmation: it is
// asked at once, naming what becomes public; dismissed, nothing is sent.
(function () {
  var b = document.querySelector('button[data-ask-now]');
  if (!b) { return; }
  setTimeout(function () {
    if (window.confirm(b.dataset.confirm)) {
      b.form.submit();
    } else {
      document.getElementById('confirm-note').textContent = 'Not applied: nothing was changed.';
    }
  }, 0);
})();

// A document refused: the cursor goes where parsing stopped.
(function () {
  var ed = document.querySelector('textarea[data-error-offset]');
  if (!ed) { return; }
  var at = parseInt(ed.dataset.errorOffset, 10) || 0;
  ed.focus();
  ed.setSelectionRange(at, Math.min(at + 1, ed.value.length));
})();

// Live folders: the page follows the bucket's changes through the listen stream (a URL
// presigned as the signed-in key, read straight from the S3 endpoint), adding new objects
// and folders and removing deleted objects without a reload.
(function () {
  var table = document.getElementById('objects');
  var box = document.getElementById('upload');
  if (!table || !box || !table.dataset.live) { return; }
  var bucket = box.dataset.bucket, prefix = box.dataset.prefix;
  var body = table.tBodies[0];
  var more = table.dataset.next === 'true';
  function link(href, text, cls) {
    var a = document.createElement('a');
    a.href = href;
    a.textContent = text; // a key is always text
    if (cls) { a.className = cls; }
    return a;
  }
  function cell(child) {
    var td = document.createElement('td');
    if (child !== undefined) { td.append(child); }
    return td;
  }
  function find(attr, value) {
    return Array.prototype.find.call(body.rows, function (r) { return r.dataset[attr] === value; });
  }
  function emptyGone() { var e = document.getElementById('empty'); if (e) { e.remove(); } }
  function addFolder(p) {
    if (find('prefix', p)) { return; }
    emptyGone();
    var tr = document.createElement('tr');
    tr.className = 'folder';
    tr.dataset.prefix = p;
    tr.append(cell(), cell(link('/browse?bucket=' + encodeURIComponent(bucket) + '&prefix=' + encodeURIComponent(p),
      p.slice(prefix.length))), cell('folder'), cell());
    var before = Array.prototype.find.call(body.rows, function (r) {
      return r.classList.contains('object') || (r.dataset.prefix && r.dataset.prefix > p);
    });
    body.insertBefore(tr, before || null);
  }
  function addObject(key, size, time) {
    var old = find('key', key);
    if (old) {
      old.cells[2].textContent = humanSize(size);
      old.cells[2].title = size + ' bytes';
      old.cells[3].textContent = time;
      return;
    }
    var objects = Array.prototype.filter.call(body.rows, function (r) { return r.classList.contains('object'); });
    var before = objects.find(function (r) { return r.dataset.key > key; });
    // Beyond the last key of a page that has a next one: it belongs to a later page.
    if (!before && more) { return; }
    emptyGone();
    var tr = document.createElement('tr');
    tr.className = 'object';
    tr.dataset.key = key;
    var box = document.createElement('input');
    box.type = 'checkbox';
    box.name = 'key';
    box.value = key;
    box.setAttribute('aria-label', 'select ' + key.slice(prefix.length));
    tr.append(cell(box), cell(link('/object?bucket=' + encodeURIComponent(bucket) + '&key=' + encodeURIComponent(key),
      key.slice(prefix.length), 'key')), cell(humanSize(size)), cell(time));
    tr.cells[2].className = 'size';
    tr.cells[2].title = size + ' bytes';
    body.insertBefore(tr, before || null);
  }
  function apply(rec) {
    var o = rec.s3 && rec.s3.object;
    if (!o || typeof rec.eventName !== 'string') { return; }
    var key = decodeURIComponent(String(o.key).replace(/\+/g, ' '));
    if (key.slice(0, prefix.length) !== prefix) { return; }
    var rest = key.slice(prefix.length);
    var slash = rest.indexOf('/');
    // Listen records name events as MinIO does (s3:ObjectCreated:Put).
    var name = rec.eventName.replace(/^s3:/, '');
    if (name.indexOf('ObjectCreated:') === 0) {
      if (slash >= 0) { addFolder(prefix + rest.slice(0, slash + 1)); } else { addObject(key, o.size || 0, rec.eventTime || ''); }
    } else if (name.indexOf('ObjectRemoved:') === 0 && slash < 0) {
      var row = find('key', key);
      if (row) { row.remove(); }
    }
  }
  function follow(url) {
    fetch(url).then(function (r) {
      if (!r.ok || !r.body) {
        // Refused (no permission to listen, a database without change streams): stop.
        var e = new Error('HTTP ' + r.status);
        e.final = r.status >= 400 && r.status !== 503;
        throw e;
      }
      table.dataset.liveState = 'on';
      var reader = r.body.getReader(), decoder = new TextDecoder(), buffered = '';
      function next() {
        return reader.read().then(function (chunk) {
          if (chunk.done) { return; }
          buffered += decoder.decode(chunk.value, { stream: true });
          var lines = buffered.split('\n');
          buffered = lines.pop();
          lines.forEach(function (line) {
            if (!line.trim()) { return; }
            try { (JSON.parse(line).Records || []).forEach(apply); } catch (e) { /* not a record */ }
          });
          return next();
        });
      }
      return next();
    }).catch(function (e) { return e && e.final; }).then(function (final) {
      table.dataset.liveState = 'off';
      if (final === true) { return; }
      // The stream ended (a restart, the URL's hour): follow again with a new URL.
      setTimeout(function () {
        fetch('/live?bucket=' + encodeURIComponent(bucket) + '&prefix=' + encodeURIComponent(prefix), { credentials: 'same-origin' })
          .then(function (r) { return r.ok && !r.redirected ? r.json() : null; })
          .then(function (j) { if (j && j.url) { follow(j.url); } })
          .catch(function () {});
      }, 3000);
    });
  }
  follow(table.dataset.live);
})();

// A conversion under way: its progress is reloaded every few seconds.
(function () {
  var c = document.getElementById('converting');
  if (c && c.dataset.refresh) {
    setTimeout(function () { window.location.replace(window.location.pathname + window.location.search); },
      1000 * parseInt(c.dataset.refresh, 10));
  }
})();

// Single sign-on: the sign-in this tab begins is bound to a random value kept in this
// origin's sessionStorage, which no other site or port can set; the callback page posts it
// back (see src/console/sso.rs: cookies alone could be planted by a page of the S3 endpoint).
(function () {
  var KEY = 'grids3-sso-bind';
  var a = document.getElementById('sso');
  if (a) {
    a.addEventListener('click', function (e) {
      e.preventDefault();
      var b = new Uint8Array(32);
      window.crypto.getRandomValues(b);
      var hex = Array.prototype.map.call(b, function (x) { return ('0' + x.toString(16)).slice(-2); }).join('');
      window.sessionStorage.setItem(KEY, hex);
      window.location.href = '/login/sso?bind=' + hex;
    });
  }
  var f = document.getElementById('sso-finish');
  if (f) {
    f.elements.bind.value = window.sessionStorage.getItem(KEY) || '';
    window.sessionStorage.removeItem(KEY);
    f.submit();
  }
})();
