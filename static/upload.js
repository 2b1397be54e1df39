// The new-share page's resumable upload, through the official tus client (tus.min.js): the file
// goes to /uploads in chunks small enough for a 100 MB proxy cap, survives dropped connections and
// page reloads, and the form is then posted with the finished upload's id instead of the file.
// Without JavaScript (or without tus support) the form posts the file itself, as it always did.
"use strict";
(function () {
  // Below Cloudflare's and the usual nginx caps of 100 MB, with room for headers.
  var CHUNK_BYTES = 50 * 1024 * 1024;
  // Waits between tries after a network failure; the last one repeats no further.
  var RETRY_DELAYS = [0, 1000, 3000, 5000, 10000, 20000, 30000, 60000];

  var form = document.querySelector("form[data-upload]");
  var panel = document.getElementById("uploader");
  if (!form || !panel) return;
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
  // browser's language, not the page's), and show the chosen file with its size.
  var zone = form.querySelector("[data-drop-zone]");
  var chosen = zone && zone.querySelector("[data-drop-chosen]");
  var fileError = document.getElementById("file-error");
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

  // The limit, checked before a byte is sent (the server checks it again).
  function tooLarge(file) {
    var max = Number(fileInput.dataset.maxBytes);
    return file && max > 0 && file.size > max;
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

  function checkFile() {
    var file = fileInput.files && fileInput.files[0];
    if (chosen) chosen.textContent = file ? file.name + " (" + size(file.size) + ")" : fileInput.dataset.none;
    if (tooLarge(file)) {
      showFileError(fileInput.dataset.overLimit.replace("{size}", size(file.size)).replace("{limit}", fileInput.dataset.maxSize));
      return false;
    }
    showFileError("");
    return true;
  }

  fileInput.addEventListener("change", checkFile);
  form.addEventListener("submit", function (event) {
    if (checkFile()) return;
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

  function say(text) { status.textContent = text; }

  function timeLeft(remaining) {
    if (!rate) return "";
    var minutes = Math.round(remaining / rate / 60);
    return minutes < 1 ? words.underAMinute : words.minutesLeft.replace("{minutes}", minutes);
  }

  var last = null;
  function onProgress(sent, total) {
    var now = Date.now();
    if (last && now > last.at) {
      var current = (sent - last.sent) / ((now - last.at) / 1000);
      if (current >= 0) rate = rate ? 0.8 * rate + 0.2 * current : current;
    }
    last = { at: now, sent: sent };
    progress.value = total ? Math.floor((sent / total) * 100) : 0;
    var text = words.progress.replace("{sent}", size(sent)).replace("{total}", size(total));
    var left = timeLeft(total - sent);
    say(left ? text + " · " + left : text);
  }

  function setRunning(on) {
    running = on;
    pause.textContent = on ? words.pause : words.resume;
    if (!on) { last = null; rate = null; }
  }

  function reset(message) {
    upload = null;
    setRunning(false);
    panel.hidden = true;
    submit.disabled = false;
    fileInput.disabled = false;
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

  function finish() {
    say(words.finishing);
    // The new file replaces an upload a form shown again had kept.
    Array.prototype.forEach.call(form.querySelectorAll("input[name=upload]"), function (kept) { kept.remove(); });
    var field = document.createElement("input");
    field.type = "hidden";
    field.name = "upload";
    field.value = upload.url.split("/").pop();
    form.appendChild(field); // the last field, after the others, as the server reads them
    fileInput.disabled = true; // a disabled input is not sent: the file is already on the server
    form.submit();
  }

  function start(file) {
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
      onSuccess: finish,
      onError: function (error) {
        setRunning(false);
        say(messageFor(error));
        var code = statusOf(error);
        if (code === 413 || code === 507) reset(messageFor(error));
      }
    });
    panel.hidden = false;
    submit.disabled = true;
    fileInput.disabled = true;
    setRunning(true);
    upload.findPreviousUploads().then(function (previous) {
      if (previous.length) {
        upload.resumeFromPreviousUpload(previous[0]);
        say(words.resuming);
      }
      upload.start();
    });
  }

  form.addEventListener("submit", function (event) {
    var file = fileInput.files && fileInput.files[0];
    // A form shown again with an upload already on the server posts as it is.
    if (!file) return;
    event.preventDefault();
    if (!upload) start(file);
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
    // abort(true) also deletes what the server holds (tus termination) and the stored fingerprint.
    ending.abort(true).then(function () { reset(words.cancelled); }, function () { reset(words.cancelled); });
  });

  // Back online after the retries ran out: go on by itself.
  window.addEventListener("online", function () {
    if (upload && !running && !held) { setRunning(true); upload.start(); }
  });
})();
