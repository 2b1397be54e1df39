// The resumable upload of the new-share page and of a file request's upload step, through the
// official tus client (tus.min.js): each chosen file goes in turn to the form's tus endpoint
// (`data-tus-endpoint`: the sender's /uploads, or the request link's /s/{token}/uploads), in
// chunks small enough for a 100 MB proxy cap, survives dropped connections and page reloads, and
// the form is then posted with the finished uploads' ids instead of the files. Before sending, the chosen files are listed, each with a button to
// leave it out. Without JavaScript (or without tus support) the form posts the files themselves.
"use strict";
(function () {
  // Below Cloudflare's and the usual nginx caps of 100 MB, with room for headers.
  var CHUNK_BYTES = 50 * 1024 * 1024;
  // Waits between tries after a network failure; the last one repeats no further.
  var RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000, 30000, 60000];

  // Set up once the form is on the page: at load, or when a request's upload step replaces its
  // code step (htmx).
  function setUp() {
    var form = document.querySelector("form[data-upload]");
    var panel = document.getElementById("uploader");
    if (!form || !panel || form.dataset.uploadReady) return;
    form.dataset.uploadReady = "true";
    var fileInput = form.querySelector("input[type=file]");
    var words = panel.dataset;

    // Decimal units, written as the server writes every size (`human_size`: 1 KB is 1,000 bytes).
    function size(bytes) {
      if (bytes < 1000) return bytes + " " + words.bytesUnit;
      var units = ["KB", "MB", "GB", "TB"];
      var value = bytes / 1000;
      var unit = 0;
      while (value >= 999.5 && unit < units.length - 1) { value /= 1000; unit += 1; }
      var text = value < 10 ? value.toFixed(1) : value.toFixed(0);
      return text.replace(/\.0$/, "") + " " + units[unit];
    }

    // The drop zone: the zone's own words replace the browser's file button (which speaks the
    // browser's language, not the page's), and show the chosen files with their sizes.
    var zone = form.querySelector("[data-drop-zone]");
    var chosen = zone && zone.querySelector("[data-drop-chosen]");
    var fileError = document.getElementById("file-error");
    var list = document.getElementById("chosen-files");
    // The files to send, in order: what the input holds, less what was removed from the list.
    var picked = [];
    if (zone && chosen) {
      zone.classList.add("is-enhanced");
      chosen.hidden = false;
      zone.addEventListener("dragover", function (event) { event.preventDefault(); zone.classList.add("is-dragging"); });
      zone.addEventListener("dragleave", function () { zone.classList.remove("is-dragging"); });
      zone.addEventListener("drop", function (event) {
        event.preventDefault();
        zone.classList.remove("is-dragging");
        if (!event.dataTransfer || !event.dataTransfer.files.length) return;
        fileInput.files = event.dataTransfer.files;
        fileInput.dispatchEvent(new Event("change", { bubbles: true }));
      });
    }

    function totalOf(files) {
      return files.reduce(function (sum, file) { return sum + file.size; }, 0);
    }

    // The limits, checked before a byte is sent (the server checks them again): the files
    // taken, each file's size where there is such a limit, and their size together.
    function overLimit(files) {
      var limits = fileInput.dataset;
      var max = Number(limits.maxBytes);
      var most = Number(limits.maxFiles);
      if (limits.maxFiles !== undefined && files.length > most) {
        return limits.tooMany.replace("{count}", files.length).replace("{max}", most);
      }
      var perFile = Number(limits.maxFileBytes);
      var large = perFile > 0 && files.filter(function (file) { return file.size > perFile; })[0];
      if (large) {
        return limits.fileOverLimit.replace("{name}", large.name).replace("{size}", size(large.size)).replace("{limit}", limits.maxFileSize);
      }
      if (limits.maxBytes !== undefined && totalOf(files) > max) {
        return limits.overLimit.replace("{size}", size(totalOf(files))).replace("{limit}", limits.maxSize);
      }
      return "";
    }

    function showFileError(text) {
      if (!fileError) return;
      fileError.setAttribute("role", "alert");
      fileError.textContent = text;
      fileError.hidden = !text;
      var described = (fileInput.getAttribute("aria-describedby") || "").split(" ").filter(function (id) {
        return id && id !== "file-error";
      });
      if (text) {
        fileInput.setAttribute("aria-invalid", "true");
        described.unshift("file-error");
      } else {
        fileInput.removeAttribute("aria-invalid");
      }
      fileInput.setAttribute("aria-describedby", described.join(" "));
      if (zone) zone.classList.toggle("is-invalid", !!text);
    }

    // The input holds exactly the picked files, so a form posted without the uploader (no tus)
    // sends those.
    function syncInput() {
      if (typeof DataTransfer === "undefined") return;
      try {
        var transfer = new DataTransfer();
        picked.forEach(function (file) { transfer.items.add(file); });
        fileInput.files = transfer.files;
      } catch (ignored) { /* an older browser posts what was chosen */ }
    }

    // The list under the zone: each file with its size, a bar while it goes, and a button to
    // leave it out before sending.
    function renderList() {
      if (!list) return;
      list.textContent = "";
      list.hidden = picked.length < 2;
      if (picked.length < 2) return;
      picked.forEach(function (file, index) {
        var item = document.createElement("li");
        item.setAttribute("data-chosen-file", "");
        var name = document.createElement("span");
        name.className = "chosen-name";
        name.textContent = file.name + " (" + size(file.size) + ")";
        var bar = document.createElement("progress");
        bar.max = 100;
        bar.value = 0;
        bar.hidden = true;
        bar.setAttribute("aria-label", file.name);
        var remove = document.createElement("button");
        remove.type = "button";
        remove.className = "button-secondary";
        remove.textContent = list.dataset.remove;
        remove.setAttribute("aria-label", list.dataset.removeNamed.replace("{name}", file.name));
        remove.addEventListener("click", function () {
          picked.splice(index, 1);
          syncInput();
          checkFile();
          fileInput.focus();
        });
        item.appendChild(name);
        item.appendChild(bar);
        item.appendChild(remove);
        list.appendChild(item);
      });
    }

    function checkFile() {
      if (chosen) {
        var words = picked.length === 1 ? picked[0].name + " (" + size(picked[0].size) + ")"
          : picked.length > 1 && list ? list.dataset.filesChosen.replace("{n}", picked.length).replace("{size}", size(totalOf(picked)))
          : fileInput.dataset.none;
        chosen.textContent = words;
      }
      renderList();
      var refusal = overLimit(picked);
      showFileError(refusal);
      return !refusal;
    }

    fileInput.addEventListener("change", function () {
      picked = Array.prototype.slice.call(fileInput.files || []);
      checkFile();
    });
    // A secret note is sent without files: the server refuses any chosen, before storing a byte.
    var noteChoice = document.getElementById("kind-note");
    function sendsNote() { return !!(noteChoice && noteChoice.checked); }

    form.addEventListener("submit", function (event) {
      if (sendsNote() || checkFile()) return;
      event.preventDefault();
      event.stopImmediatePropagation();
      fileInput.focus();
    });

    if (!window.tus || !window.tus.isSupported) return;

    var submit = form.querySelector("button[type=submit]");
    var progress = document.getElementById("upload-progress");
    var status = document.getElementById("upload-status");
    var pause = panel.querySelector("[data-upload-pause]");
    var cancel = panel.querySelector("[data-upload-cancel]");
    var upload = null;
    var running = false;
    var held = false; // paused by the person, not by the network
    var rate = null; // bytes per second, smoothed
    // The batch being sent: the files, which one goes now, the bytes of those before it, and the
    // finished uploads' ids.
    var batch = null;

    function say(text) { status.textContent = text; }

    function timeLeft(remaining) {
      if (!rate) return "";
      var minutes = Math.round(remaining / rate / 60);
      return minutes < 1 ? words.underAMinute : words.minutesLeft.replace("{minutes}", minutes);
    }

    function fileBar(index) {
      var bars = list ? list.querySelectorAll("progress") : [];
      return bars[index] || null;
    }

    var last = null;
    function onProgress(sentOfFile, totalOfFile) {
      var sent = batch.before + sentOfFile;
      var total = batch.total;
      var now = Date.now();
      if (last && now > last.at) {
        var current = (sent - last.sent) / ((now - last.at) / 1000);
        if (current >= 0) rate = rate ? 0.8 * rate + 0.2 * current : current;
      }
      last = { at: now, sent: sent };
      progress.value = total ? Math.floor((sent / total) * 100) : 0;
      var bar = fileBar(batch.index);
      if (bar) { bar.hidden = false; bar.value = totalOfFile ? Math.floor((sentOfFile / totalOfFile) * 100) : 100; }
      var text = words.progress.replace("{sent}", size(sent)).replace("{total}", size(total));
      var left = timeLeft(total - sent);
      say(left ? text + " · " + left : text);
    }

    function setRunning(on) {
      running = on;
      pause.textContent = on ? words.pause : words.resume;
      if (!on) { last = null; rate = null; }
    }

    function setPicking(on) {
      fileInput.disabled = !on;
      if (list) Array.prototype.forEach.call(list.querySelectorAll("button"), function (button) { button.disabled = !on; });
    }

    // Ends the batch's uploads already sent but not yet posted with the form (tus termination),
    // so that a batch given up does not keep holding what they take: a file request's room (its
    // files and bytes), or the sender's reservation, until they expire a day later.
    function endSent() {
      if (!batch) return;
      var csrf = form.querySelector("input[name=csrf_token]").value;
      batch.ids.forEach(function (id) {
        fetch(form.dataset.tusEndpoint + "/" + id, {
          method: "DELETE",
          headers: { "Tus-Resumable": "1.0.0", "X-CSRF-Token": csrf },
          credentials: "same-origin"
        }).catch(function () { /* it expires unused */ });
      });
    }

    function reset(message) {
      endSent();
      upload = null;
      batch = null;
      setRunning(false);
      panel.hidden = true;
      submit.disabled = false;
      setPicking(true);
      say(message || "");
    }

    function statusOf(error) {
      var response = error && error.originalResponse;
      return response ? response.getStatus() : 0;
    }

    function messageFor(error) {
      var code = statusOf(error);
      if (code === 413) return words.tooLarge;
      if (code === 507) return words.noRoom;
      if (code === 401 || code === 403) return words.signedOut;
      return navigator.onLine === false ? words.offline : words.failed;
    }

    // The client's own rule (retry what is not a 4xx, and 409/423), saying on the page that it does.
    function shouldRetry(error) {
      var code = statusOf(error);
      var retry = (code < 400 || code > 499 || code === 409 || code === 423) && navigator.onLine !== false;
      if (retry) say(words.retrying);
      return retry;
    }

    // The official client starts a new upload when a HEAD is answered with anything but 2xx or 423,
    // so a proxy's 502 while the server restarts would throw away everything sent so far. A 5xx to
    // a HEAD is made a network error instead: the client then retries the HEAD later, as it does
    // after a dropped connection, and resumes the same upload.
    var plainStack = new window.tus.DefaultHttpStack();
    var httpStack = {
      createRequest: function (method, url) {
        var request = plainStack.createRequest(method, url);
        if (method !== "HEAD") return request;
        var send = request.send.bind(request);
        request.send = function (body) {
          return send(body).then(function (response) {
            if (response.getStatus() >= 500) throw new Error("tus: the server answered " + response.getStatus());
            return response;
          });
        };
        return request;
      },
      getName: function () { return "ResumingHttpStack"; }
    };

    // Every file is on the server: the form is posted with their uploads' ids (after the other
    // fields, as the server reads them), beside any upload a form shown again kept and left ticked.
    function finish() {
      say(words.finishing);
      batch.ids.forEach(function (id) {
        var field = document.createElement("input");
        field.type = "hidden";
        field.name = "upload";
        field.value = id;
        form.appendChild(field);
      });
      fileInput.disabled = true; // a disabled input is not sent: the files are already on the server
      form.submit();
    }

    function succeeded() {
      batch.ids.push(upload.url.split("/").pop());
      batch.before += batch.files[batch.index].size;
      var bar = fileBar(batch.index);
      if (bar) bar.value = 100;
      batch.index += 1;
      if (batch.index < batch.files.length) startFile(); else finish();
    }

    function startFile() {
      var file = batch.files[batch.index];
      upload = new window.tus.Upload(file, {
        endpoint: form.dataset.tusEndpoint,
        chunkSize: CHUNK_BYTES,
        retryDelays: RETRY_DELAYS,
        headers: { "X-CSRF-Token": form.querySelector("input[name=csrf_token]").value },
        metadata: { filename: file.name, filetype: file.type || "application/octet-stream" },
        removeFingerprintOnSuccess: true,
        httpStack: httpStack,
        onProgress: onProgress,
        onShouldRetry: shouldRetry,
        onSuccess: succeeded,
        onError: function (error) {
          setRunning(false);
          say(messageFor(error));
          var code = statusOf(error);
          if (code === 413 || code === 507) reset(messageFor(error));
        }
      });
      setRunning(true);
      upload.findPreviousUploads().then(function (previous) {
        if (previous.length) {
          upload.resumeFromPreviousUpload(previous[0]);
          say(words.resuming);
        }
        upload.start();
      });
    }

    function start(files) {
      batch = { files: files, index: 0, before: 0, total: totalOf(files), ids: [] };
      panel.hidden = false;
      submit.disabled = true;
      setPicking(false);
      startFile();
    }

    form.addEventListener("submit", function (event) {
      // A form shown again with its uploads already on the server posts as it is.
      if (!picked.length || sendsNote()) return;
      event.preventDefault();
      if (!batch) start(picked.slice());
    });

    pause.addEventListener("click", function () {
      if (!upload) return;
      held = running;
      if (running) {
        upload.abort(false);
        setRunning(false);
        say(words.paused);
      } else {
        setRunning(true);
        upload.start();
      }
    });

    cancel.addEventListener("click", function () {
      if (!upload) return;
      var ending = upload;
      setRunning(false);
      // abort(true) also deletes what the server holds of the file going now (tus termination)
      // and its stored fingerprint; reset ends the files already sent.
      ending.abort(true).then(function () { reset(words.cancelled); }, function () { reset(words.cancelled); });
    });

    // Back online after the retries ran out: go on by itself.
    window.addEventListener("online", function () {
      if (upload && !running && !held) { setRunning(true); upload.start(); }
    });
  }

  setUp();
  document.addEventListener("htmx:afterSwap", setUp);
})();
