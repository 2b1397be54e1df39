// Passkeys (WebAuthn) for the forms marked data-passkey="create" or "get": on submit, post the form
// to its data-options URL for a challenge (JSON), let the browser make or use a passkey, put the
// answer in the form's "credential" field and submit the form for real. The server's answer to that
// post is an ordinary page. Binary values travel as base64url, as the server reads and writes them.
"use strict";
(function () {
  function toBytes(text) {
    var base64 = text.replace(/-/g, "+").replace(/_/g, "/");
    var binary = atob(base64 + "===".slice((base64.length + 3) % 4));
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes.buffer;
  }

  function toText(buffer) {
    var bytes = new Uint8Array(buffer), binary = "";
    for (var i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]);
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function withBytes(list) {
    return (list || []).map(function (item) { return Object.assign({}, item, { id: toBytes(item.id) }); });
  }

  // The server's options, with the values the browser wants as bytes.
  function creationOptions(options) {
    var key = options.publicKey;
    key.challenge = toBytes(key.challenge);
    key.user.id = toBytes(key.user.id);
    key.excludeCredentials = withBytes(key.excludeCredentials);
    return { publicKey: key };
  }

  function requestOptions(options) {
    var key = options.publicKey;
    key.challenge = toBytes(key.challenge);
    key.allowCredentials = withBytes(key.allowCredentials);
    return { publicKey: key };
  }

  // The browser's credential as the server reads it.
  function answer(credential) {
    var r = credential.response;
    var response = { clientDataJSON: toText(r.clientDataJSON) };
    if (r.attestationObject) {
      response.attestationObject = toText(r.attestationObject);
      if (r.getTransports) response.transports = r.getTransports();
    } else {
      response.authenticatorData = toText(r.authenticatorData);
      response.signature = toText(r.signature);
      response.userHandle = r.userHandle ? toText(r.userHandle) : null;
    }
    return JSON.stringify({
      id: credential.id,
      rawId: toText(credential.rawId),
      type: credential.type,
      response: response,
      extensions: credential.getClientExtensionResults ? credential.getClientExtensionResults() : {},
    });
  }

  function say(form, text) {
    var alert = form.querySelector("[data-passkey-error]");
    if (!alert) return;
    alert.textContent = text;
    alert.hidden = false;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form.matches || !form.matches("form[data-passkey]")) return;
    event.preventDefault();
    if (!window.PublicKeyCredential || !navigator.credentials) {
      say(form, form.getAttribute("data-unsupported"));
      return;
    }
    var creating = form.getAttribute("data-passkey") === "create";
    var button = form.querySelector("[data-passkey-button]");
    if (button) button.disabled = true;
    var done = function () { if (button) button.disabled = false; };
    fetch(form.getAttribute("data-options"), {
      method: "POST",
      body: new URLSearchParams(new FormData(form)),
      credentials: "same-origin",
    }).then(function (reply) {
      return reply.json().catch(function () { return {}; }).then(function (body) {
        if (reply.ok) return body;
        if (body.location) window.location.assign(body.location);
        throw { shown: body.error || form.getAttribute("data-failed") };
      });
    }).then(function (options) {
      return creating
        ? navigator.credentials.create(creationOptions(options))
        : navigator.credentials.get(requestOptions(options));
    }).then(function (credential) {
      form.querySelector("input[name=credential]").value = answer(credential);
      // The password was checked with the options: it need not travel twice.
      var password = form.querySelector("input[name=password]");
      if (password) password.value = "";
      form.submit();
    }).catch(function (error) {
      done();
      if (error && error.shown) return say(form, error.shown);
      var cancelled = error && (error.name === "NotAllowedError" || error.name === "AbortError");
      say(form, form.getAttribute(cancelled ? "data-cancelled" : "data-failed"));
    });
  });
})();
