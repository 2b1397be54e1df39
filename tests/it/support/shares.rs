//! Test shares from one builder, after docs.rs's `fake_release()`: a test names only what matters
//! to it (`app.fake_share().sender(id).file("a.txt", b"a").create().await`), and the share is
//! created through the same code path as the CLI and the dashboard.

use std::time::Duration;

use watasu::{
    accounts::EmailAddress,
    i18n::Lang,
    share::{
        Message,
        create::{ShareRequest, create_share},
    },
};

use super::{RECIPIENT, TestApp, rand_suffix};

/// A share a test made.
pub struct TestShare {
    pub id: i64,
    pub token: String,
    pub sender_id: i64,
}

/// A share still being described: by default a one-hour share of a small file for
/// [`RECIPIENT`] from a fresh sender, with a message, notifying its sender of the download.
pub struct FakeShare<'a> {
    app: &'a TestApp,
    sender: Option<i64>,
    recipient: &'a str,
    file_name: &'a str,
    content: &'static [u8],
    content_type: &'a str,
    ttl: Duration,
    message: &'a str,
    notify_on_download: bool,
}

impl TestApp {
    /// A share to describe, then [`FakeShare::create`].
    pub fn fake_share(&self) -> FakeShare<'_> {
        FakeShare {
            app: self,
            sender: None,
            recipient: RECIPIENT,
            file_name: "report.txt",
            content: b"the file contents\n",
            content_type: "application/octet-stream",
            ttl: Duration::from_secs(3600),
            message: "Here is the file.",
            notify_on_download: true,
        }
    }

    /// A one-hour share of a small text file from a fresh sender to Recipient@Example.test.
    pub async fn create_share(&self) -> TestShare {
        self.fake_share().recipient("Recipient@Example.test").create().await
    }
}

impl<'a> FakeShare<'a> {
    pub fn sender(mut self, sender_id: i64) -> Self {
        self.sender = Some(sender_id);
        self
    }

    pub fn recipient(mut self, email: &'a str) -> Self {
        self.recipient = email;
        self
    }

    pub fn file(mut self, name: &'a str, content: &'static [u8]) -> Self {
        self.file_name = name;
        self.content = content;
        self
    }

    pub fn content_type(mut self, content_type: &'a str) -> Self {
        self.content_type = content_type;
        self
    }

    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    pub fn message(mut self, message: &'a str) -> Self {
        self.message = message;
        self
    }

    pub fn quiet(mut self) -> Self {
        self.notify_on_download = false;
        self
    }

    /// The request the dashboard would make for it, from `sender_id`, for a test that calls
    /// `create_share` itself (to see it refused).
    pub fn request(&self, sender_id: i64) -> ShareRequest<'a> {
        ShareRequest {
            sender_id,
            recipient: EmailAddress::parse(self.recipient).unwrap(),
            file_name: self.file_name,
            content_type: self.content_type,
            content: Box::pin(self.content),
            max_bytes: u64::MAX,
            ttl: self.ttl,
            message: Message::parse(self.message).unwrap(),
            lang: Lang::En,
            notify_on_download: self.notify_on_download,
            name_file_in_mail: true,
        }
    }

    /// Stores the file and creates the share (and its sender, if none was named).
    pub async fn create(self) -> TestShare {
        let app = self.app;
        let sender_id = match self.sender {
            Some(id) => id,
            None => app.create_sender(&format!("sender-{}@example.test", rand_suffix()), "Sender Sato").await,
        };
        let issued =
            create_share(&app.state.shares.links, app.state.store.as_ref(), self.request(sender_id)).await.unwrap();
        TestShare { id: issued.share_id, token: issued.token.expose().to_owned(), sender_id }
    }
}
