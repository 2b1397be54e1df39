//! The password change answers with a redirect to its section and a notice, so reloading the
//! answer posts nothing again; a refused change shows the form again, its fields empty.

use crate::{
    both_backends,
    support::{Backend, PASSWORD, TestApp},
};

const NEW_PASSWORD: &str = "violet harbor quietly ninety";

async fn a_changed_password_leads_to_the_password_section_with_a_notice(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let account = sender.get("/account").await;
    assert!(account.texts("#password [role=status]").is_empty(), "a notice before any change");

    let fields = [
        ("csrf_token", account.csrf_token()),
        ("current_password", PASSWORD.into()),
        ("new_password", NEW_PASSWORD.into()),
    ];
    let fields: Vec<_> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let changed = sender.post_form("/account/password", &fields).await;

    assert_eq!(changed.status, 303);
    let location = changed.header("location").expect("a redirect").to_owned();
    assert_eq!(location, "/account?saved=password#password");
    let landed = sender.get(&location).await;
    assert_eq!(landed.status, 200, "the redirect's session is the one the change kept");
    assert_eq!(landed.texts("#password [role=status]"), [watasu::i18n::Lang::Ja.text().auth.password_changed]);
    assert_eq!(app.browser().sign_in("s@example.test", NEW_PASSWORD).await.status, 303);
}

async fn a_refused_change_shows_the_form_again_without_the_typed_passwords(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_sender_with_password("s@example.test", "Sato", PASSWORD).await;
    let sender = app.sign_in("s@example.test", PASSWORD).await;
    let account = sender.get("/account").await;

    let fields = [
        ("csrf_token", account.csrf_token()),
        ("current_password", "a guess at it".into()),
        ("new_password", NEW_PASSWORD.into()),
    ];
    let fields: Vec<_> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = sender.post_form("/account/password", &fields).await;

    assert_eq!(refused.status, 400);
    assert_eq!(refused.texts("#password-error").len(), 1, "{}", refused.body);
    assert!(refused.texts("#password [role=status]").is_empty(), "a refused change says it changed");
    assert_eq!(refused.attr("#current_password", "value"), None);
    assert_eq!(refused.attr("#new_password", "value"), None);
    assert!(!refused.body.contains(NEW_PASSWORD) && !refused.body.contains("a guess at it"));
    assert_eq!(app.browser().sign_in("s@example.test", PASSWORD).await.status, 303, "the password is unchanged");
}

both_backends!(
    a_changed_password_leads_to_the_password_section_with_a_notice,
    a_refused_change_shows_the_form_again_without_the_typed_passwords
);
