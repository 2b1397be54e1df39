//! The webhook pages over HTTP: a private address is refused on the form (400, the field marked),
//! a registered endpoint's secret is shown once and never cached, its page lists the delivery log
//! and its buttons work without JavaScript, an admin may make an endpoint hear the whole team
//! while a sender's form does not offer it, and nobody reaches another person's endpoint.

use watasu::webhooks::signing::WebhookSecret;

use crate::{
    both_backends,
    support::{Backend, PASSWORD},
};

async fn the_pages_register_show_the_secret_once_and_drive_an_endpoint_without_javascript(backend: Backend) {
    let app = super::app_allowing_loopback(backend).await;
    let receiver = super::receiver::Receiver::start(0).await;
    let browser = app.signed_in_sender("sato@example.test").await;
    let list = browser.get("/webhooks").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.attr("input[name=team]", "value").is_none(), "a sender is offered the whole team");
    let csrf = list.csrf_token();

    let refused = browser
        .post_form(
            "/webhooks",
            &[("csrf_token", &csrf), ("url", "https://169.254.169.254/"), ("event", "share.opened")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.attr("#webhook_url", "aria-invalid").as_deref(), Some("true"));
    assert_eq!(refused.texts("#webhook-error").len(), 1);

    let url = receiver.url();
    let fields = [
        ("csrf_token", csrf.as_str()),
        ("url", url.as_str()),
        ("event", "share.opened"),
        ("event", "share.downloaded"),
    ];
    let created = browser.post_form("/webhooks", &fields).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.header("cache-control"), Some("no-store"));
    let secret = created.texts("[data-new-secret]").pop().expect("the page shows the secret");
    assert!(WebhookSecret::parse(&secret).is_some(), "{secret}");
    let endpoint_path = created.attr("[data-continue]", "href").unwrap();
    let endpoint = browser.get(&endpoint_path).await;
    assert_eq!(endpoint.status, 200, "{}", endpoint.body);
    assert!(!endpoint.body.contains(&secret), "the secret shows again");
    assert_eq!(endpoint.texts("[data-no-messages]").len(), 1);

    receiver.accept(&[&secret]);
    let test = browser.post_form(&format!("{endpoint_path}/test"), &[("csrf_token", &csrf)]).await;
    assert_eq!(test.status, 303, "{}", test.body);
    let after = browser.get(test.header("location").unwrap()).await;
    assert_eq!(after.texts("[data-webhook-done]").len(), 1);
    super::settle(&app).await;
    let endpoint = browser.get(&endpoint_path).await;
    assert_eq!(endpoint.attrs("[data-message-status]", "data-message-status"), ["delivered"]);
    assert_eq!(receiver.received()[0].verified, std::slice::from_ref(&secret));

    let off =
        browser.post_form(&format!("{endpoint_path}/enabled"), &[("csrf_token", &csrf), ("enabled", "off")]).await;
    let off = browser.get(off.header("location").unwrap()).await;
    assert_eq!(off.attr("[data-webhook-state]", "data-webhook-state").as_deref(), Some("false"));
    let rotated = browser.post_form(&format!("{endpoint_path}/rotate"), &[("csrf_token", &csrf)]).await;
    assert_eq!(rotated.header("cache-control"), Some("no-store"));
    let new_secret = rotated.texts("[data-new-secret]").pop().unwrap();
    assert_ne!(new_secret, secret);

    let stranger = app.signed_in_sender("suzuki@example.test").await;
    assert_eq!(stranger.get(&endpoint_path).await.status, 404);
    let stranger_csrf = stranger.get("/webhooks").await.csrf_token();
    let deleted = stranger.post_form(&format!("{endpoint_path}/delete"), &[("csrf_token", &stranger_csrf)]).await;
    assert_eq!(deleted.status, 404);

    let deleted = browser.post_form(&format!("{endpoint_path}/delete"), &[("csrf_token", &csrf)]).await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    let list = browser.get(deleted.header("location").unwrap()).await;
    assert_eq!((list.texts("[data-no-webhooks]").len(), list.texts("[data-webhook-done]").len()), (1, 1));

    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let list = admin.get("/webhooks").await;
    let csrf = list.csrf_token();
    let fields = [("csrf_token", csrf.as_str()), ("url", url.as_str()), ("event", "share.created"), ("team", "on")];
    assert_eq!(admin.post_form("/webhooks", &fields).await.status, 200);
    let list = admin.get("/webhooks").await;
    assert_eq!(list.attrs("[data-webhooks] li", "data-team"), ["true"]);
}

both_backends!(the_pages_register_show_the_secret_once_and_drive_an_endpoint_without_javascript);
