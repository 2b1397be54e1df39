//! Accounts as a test needs them: admins and senders who can sign in, signing in over the form,
//! and an admin inviting someone by mail.

use std::time::Duration;

use watasu::accounts::{EmailAddress, Role, Users, password::hash_password};

use super::{Browser, Page, TestApp};

/// The password the test accounts sign in with.
pub const PASSWORD: &str = "lantern orchard seventeen copper";

impl TestApp {
    /// Creates an admin who can sign in with [`PASSWORD`].
    pub async fn create_admin(&self, email: &str) -> i64 {
        let hash = hash_password(watasu::secret::SecretString::new(PASSWORD)).await.unwrap();
        let email = EmailAddress::parse(email).unwrap();
        Users::new(self.db().clone()).create(&email, "Admin", &hash, Role::Admin, Default::default()).await.unwrap()
    }

    /// A new browser signed in as `email`.
    pub async fn sign_in(&self, email: &str, password: &str) -> Browser {
        let browser = self.browser();
        let answer = browser.sign_in(email, password).await;
        assert_eq!(answer.status, 303, "{}", answer.body);
        browser
    }

    /// A new sender who can sign in with [`PASSWORD`], signed in in a new browser.
    pub async fn signed_in_sender(&self, email: &str) -> Browser {
        self.create_sender_with_password(email, "Sender Sato", PASSWORD).await;
        self.sign_in(email, PASSWORD).await
    }

    /// The signed-in admin invites `email` from the team page; returns the path of the link in
    /// the invitation mail.
    pub async fn invite(&self, admin: &Browser, email: &str) -> String {
        let team = admin.get("/team").await;
        assert_eq!(team.status, 200);
        let before = self.smtp.messages().len();
        let page = admin.post_form("/team/invite", &[("csrf_token", &team.csrf_token()), ("email", email)]).await;
        assert_eq!(page.status, 303, "{}", page.body);
        assert!(
            page.header("location").unwrap_or_default().starts_with("/team?done=invited&invitation="),
            "{}",
            page.body
        );
        let mail = self.smtp.wait_for(before + 1, Duration::from_secs(10)).await.pop().unwrap();
        assert_eq!(mail.to, [email]);
        let text = mail.text();
        let start = text.find("/invite/").expect("the mail carries the link");
        text[start..start + "/invite/".len() + 64].to_owned()
    }
}

impl Browser {
    /// Fills in and posts the sign-in form; returns the answer (a redirect when it worked).
    pub async fn sign_in(&self, email: &str, password: &str) -> Page {
        let form = self.get("/login").await;
        self.post_form("/login", &[("csrf_token", &form.csrf_token()), ("email", email), ("password", password)]).await
    }

    /// Posts the new-share form with a file, as a browser without JavaScript would; returns the
    /// answer (a redirect to the created page when it worked).
    pub async fn post_new_share(&self, csrf: Option<&str>, recipient: &str, file_name: &str, content: Vec<u8>) -> Page {
        let mut form = reqwest::multipart::Form::new();
        if let Some(csrf) = csrf {
            form = form.text("csrf_token", csrf.to_owned());
        }
        let form = form
            .text("recipient", recipient.to_owned())
            .text("expires_in", "1d")
            .text("message", "ご確認ください <b>")
            .text("mail_lang", "ja")
            .text("notify", "1")
            .part("file", reqwest::multipart::Part::bytes(content).file_name(file_name.to_owned()));
        let request = self.client.post(self.url("/shares/new")).header("Sec-Fetch-Site", "same-origin");
        Page::read(request.multipart(form).send().await.unwrap()).await
    }
}
