//! Languages follow the person: the new-share form offers the page's language for the
//! recipient's mail and then the sender's last choice; the inviter chooses the invitation's
//! language (kept when it is sent again); an account keeps the language it signed up in for the
//! mails about it and changes it on the account page.

use std::time::Duration;

use watasu::i18n::Lang;

use crate::{
    both_backends,
    support::{Backend, Browser, PASSWORD, Page, TestApp},
};

async fn in_lang(browser: &Browser, path: &str, lang: Lang) -> Page {
    browser.get_with(path, &[("Accept-Language", lang.code())]).await
}

fn chosen(page: &Page) -> Option<String> {
    page.attr("#mail_lang option[selected]", "value")
}

async fn the_new_share_form_offers_the_page_language_then_the_senders_last_choice(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.signed_in_sender("sender@example.test").await;
    assert_eq!(chosen(&in_lang(&sender, "/shares/new", Lang::En).await).as_deref(), Some("en"));
    assert_eq!(chosen(&in_lang(&sender, "/shares/new", Lang::Ja).await).as_deref(), Some("ja"));

    let form = in_lang(&sender, "/shares/new", Lang::En).await;
    let created = sender.post_new_share(Some(&form.csrf_token()), "r@example.test", "plan.pdf", b"plan".to_vec()).await;
    assert_eq!(created.status, 303, "{}", created.body);
    assert_eq!(
        chosen(&in_lang(&sender, "/shares/new", Lang::En).await).as_deref(),
        Some("ja"),
        "the choice was forgotten"
    );
    app.stop().await;
}

async fn an_invitation_goes_in_the_chosen_language_and_the_account_keeps_the_one_it_signed_up_in(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    app.create_admin("admin@example.test").await;
    let admin = app.sign_in("admin@example.test", PASSWORD).await;
    let team = in_lang(&admin, "/team", Lang::Ja).await;
    assert_eq!(team.attr("#invite_lang option[selected]", "value").as_deref(), Some("ja"));
    let fields = [("csrf_token", team.csrf_token()), ("email", "new@example.test".into()), ("lang", "en".into())];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(admin.post_form("/team/invite", &fields).await.status, 303);
    let mail = app.smtp.wait_for(1, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.subject(), Lang::En.text().mail.invite_subject);

    let id = team_invitation(&admin).await;
    let team = admin.get("/team").await;
    admin.post_form(&format!("/team/invitations/{id}/resend"), &[("csrf_token", &team.csrf_token())]).await;
    let mail = app.smtp.wait_for(2, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.subject(), Lang::En.text().mail.invite_subject, "sent again in another language");
    let text = mail.text();
    let start = text.find("/invite/").unwrap();
    let link = &text[start..start + "/invite/".len() + 64];

    let invited = app.browser();
    let page = in_lang(&invited, link, Lang::En).await;
    let csrf = page.csrf_token();
    let fields = [("csrf_token", csrf.as_str()), ("name", "New Sender"), ("password", PASSWORD)];
    let headers = [("Accept-Language", "en"), ("Sec-Fetch-Site", "same-origin")];
    let accepted = invited.post_form_with(link, &fields, &headers).await;
    assert_eq!(accepted.status, 303, "{}", accepted.body);
    let account = in_lang(&invited, "/account", Lang::Ja).await;
    assert_eq!(chosen(&account).as_deref(), Some("en"), "the account forgot the language it signed up in");

    let saved =
        invited.post_form("/account/mail-language", &[("csrf_token", &account.csrf_token()), ("lang", "ja")]).await;
    assert_eq!(saved.header("location"), Some("/account?saved=mail-language#mail-language"));
    let account = in_lang(&invited, "/account?saved=mail-language", Lang::En).await;
    assert_eq!(chosen(&account).as_deref(), Some("ja"));
    let expected = Lang::En.text().auth.mail_lang_saved.replace("{lang}", Lang::Ja.text().chrome.lang_name);
    assert_eq!(account.texts("[data-mail-lang-saved]"), [expected]);
    app.stop().await;
}

async fn a_fresh_link_is_mailed_in_the_shares_language_not_the_senders(backend: Backend) {
    let app = TestApp::spawn(backend).await;
    let sender = app.signed_in_sender("sender@example.test").await;
    let account = sender.get("/account").await;
    sender.post_form("/account/mail-language", &[("csrf_token", &account.csrf_token()), ("lang", "en")]).await;
    let form = sender.get("/shares/new").await;
    // The helper's form chooses Japanese for the recipient's mail.
    let created = sender.post_new_share(Some(&form.csrf_token()), "r@example.test", "plan.pdf", b"plan".to_vec()).await;
    let location = created.header("location").expect("the created page").to_owned();
    let id = location.trim_start_matches("/shares/").trim_end_matches("/created").to_owned();
    app.smtp.wait_for(1, Duration::from_secs(10)).await;

    let share = sender.get(&format!("/shares/{id}")).await;
    sender.post_form(&format!("/shares/{id}/link"), &[("csrf_token", &share.csrf_token())]).await;
    let mail = app.smtp.wait_for(2, Duration::from_secs(10)).await.pop().unwrap();
    assert_eq!(mail.to, ["r@example.test"]);
    assert!(mail.text().contains(Lang::Ja.text().mail.notify_open), "{}", mail.text());
    app.stop().await;
}

async fn team_invitation(admin: &Browser) -> String {
    admin.get("/team").await.attr("[data-invitation]", "data-invitation").expect("an invitation is listed")
}

both_backends!(
    the_new_share_form_offers_the_page_language_then_the_senders_last_choice,
    an_invitation_goes_in_the_chosen_language_and_the_account_keeps_the_one_it_signed_up_in,
    a_fresh_link_is_mailed_in_the_shares_language_not_the_senders
);
